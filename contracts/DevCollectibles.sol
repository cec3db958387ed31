// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// The transfer events of ERC-721 and ERC-1155, minimal: enough to watch NFT activity on the dev chain.
contract DevCollectibles {
    mapping(uint256 => address) public ownerOf;
    uint256 public minted;

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);
    event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value);
    event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values);

    function mint(address to) external returns (uint256 id) {
        id = ++minted;
        ownerOf[id] = to;
        emit Transfer(address(0), to, id);
    }

    function transferFrom(address from, address to, uint256 id) external {
        require(ownerOf[id] == from && from == msg.sender, "not the owner");
        ownerOf[id] = to;
        emit Transfer(from, to, id);
    }

    function mintMany(address to, uint256[] calldata ids, uint256[] calldata amounts) external {
        require(ids.length == amounts.length, "lengths differ");
        if (ids.length == 1) emit TransferSingle(msg.sender, address(0), to, ids[0], amounts[0]);
        else emit TransferBatch(msg.sender, address(0), to, ids, amounts);
    }
}
