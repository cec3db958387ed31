// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// Passes the value it is sent on to another address: an internal transaction.
contract Forwarder {
    function forward(address payable to) external payable {
        (bool sent, ) = to.call{value: msg.value}("");
        require(sent, "forward failed");
    }
}
