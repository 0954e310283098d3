// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/**
 * @title TestSmartWallet
 * @notice TEST CONTRACT FOR LOCAL CHAINS ONLY: a minimal ERC-1271 contract wallet whose single EOA `signer`
 *         approves digests. It proves that TestUSDC accepts EIP-3009 authorizations from contract wallets as
 *         FiatToken v2.2 does (docs/decisions.md, DESIGN §18).
 */
contract TestSmartWallet is IERC1271 {
    /// @notice The EOA whose ECDSA signature over a digest this wallet accepts.
    address public immutable signer;

    constructor(address signer_) {
        signer = signer_;
    }

    /// @inheritdoc IERC1271
    function isValidSignature(bytes32 hash, bytes memory signature) external view returns (bytes4) {
        (address recovered, ECDSA.RecoverError err,) = ECDSA.tryRecover(hash, signature);
        return err == ECDSA.RecoverError.NoError && recovered == signer ? IERC1271.isValidSignature.selector : bytes4(0xffffffff);
    }
}
