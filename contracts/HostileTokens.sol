// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// Emits ERC-20 transfers for whoever calls it: what a token a hostile tenant deploys needs to be matched.
abstract contract TransferEmitter {
    event Transfer(address indexed from, address indexed to, uint256 value);

    function transfer(address to, uint256 value) external returns (bool) {
        emit Transfer(msg.sender, to, value);
        return true;
    }

    function decimals() external pure virtual returns (uint8) {
        return 18;
    }
}

/// A name and a symbol of 450 000 characters each, control characters among them.
contract HugeNameToken is TransferEmitter {
    uint256 private constant LENGTH = 450_000;

    function name() external pure returns (string memory) {
        return filled(0x41);
    }

    function symbol() external pure returns (string memory) {
        return filled(0x07);
    }

    function filled(uint8 char) private pure returns (string memory) {
        bytes memory text = new bytes(LENGTH);
        uint256 word = uint256(char) * (type(uint256).max / 255);
        assembly {
            for { let offset := 0 } lt(offset, LENGTH) { offset := add(offset, 32) } {
                mstore(add(add(text, 32), offset), word)
            }
        }
        return string(text);
    }
}

/// name() reverts; symbol() answers.
contract RevertingNameToken is TransferEmitter {
    function name() external pure returns (string memory) {
        revert("no name");
    }

    function symbol() external pure returns (string memory) {
        return "RVT";
    }
}

/// A name and a symbol that are not UTF-8 and hold control characters (an ANSI escape among them).
contract BadUtf8Token is TransferEmitter {
    function name() external pure returns (string memory) {
        return string(bytes(hex"ff42616400e2801b0a4e616d65fe"));
    }

    function symbol() external pure returns (string memory) {
        return string(bytes(hex"c3284241441b5b33316d"));
    }

    function decimals() external pure override returns (uint8) {
        return 255;
    }
}

/// Emits `count` logs of distinct data in one transaction: a notification too large to store whole.
contract LogFlood {
    event Noise(uint256 indexed index, bytes32 a, bytes32 b, bytes32 c);

    function flood(uint256 count) external {
        bytes32 seed = blockhash(block.number - 1);
        for (uint256 index = 0; index < count; index++) {
            seed = keccak256(abi.encode(seed, index));
            emit Noise(index, seed, keccak256(abi.encode(seed, 1)), keccak256(abi.encode(seed, 2)));
        }
    }
}
