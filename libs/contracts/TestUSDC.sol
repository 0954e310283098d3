// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";

/**
 * @title TestUSDC
 * @notice TEST TOKEN FOR LOCAL CHAINS ONLY. Anyone can mint any amount; never deploy it where it could be
 *         mistaken for real USDC (docs/architecture.md §7: real USDC is configured by address).
 * @dev Mirrors the signing surface of Circle's FiatTokenV2 so that code written against it works unchanged
 *      against real USDC: name "USD Coin", symbol "USDC", 6 decimals, EIP-712 domain
 *      ("USD Coin", "2", chainId, address(this)), EIP-2612 `permit` and EIP-3009
 *      `transferWithAuthorization` / `receiveWithAuthorization` / `cancelAuthorization` with the exact
 *      FiatTokenV2 typehashes. OpenZeppelin's ERC20Permit hard-codes EIP-712 version "1", so permit is
 *      implemented here on top of EIP712 + Nonces with version "2".
 *      Amounts are base units (1 USDC = 1_000_000).
 *
 *      Like FiatToken v2.2 where it changes our outcomes (DESIGN §18):
 *      - blacklist: `blacklister` lists an address; every transfer (transfer, transferFrom, EIP-3009, mint)
 *        from or to a listed address, and approve/permit by or for one, reverts "Blacklistable: account is blacklisted";
 *      - pause: `pauser` pauses the token; every transfer, approve, permit and EIP-3009 call reverts "Pausable: paused";
 *      - EIP-3009 signatures are checked with SignatureChecker: an EOA's ECDSA signature, or for a contract
 *        `from`/`authorizer` its ERC-1271 `isValidSignature(digest, abi.encodePacked(r, s, v))`, as
 *        FiatToken v2.2's v,r,s entry points do. (v2.2's extra `bytes signature` overloads are left out: an
 *        overloaded name would make every by-name ethers call on this ABI ambiguous; docs/decisions.md.)
 *      Roles: the deployer is `owner`, `pauser` and `blacklister`; the owner reassigns the other two.
 *      The EIP-712 domain name and version are constructor arguments so a local chain can mirror a real
 *      deployment's domain (Base: "USD Coin"/"2", Base Sepolia: "USDC"/"2").
 */
contract TestUSDC is ERC20, IERC20Permit, EIP712, Nonces {
    /// @notice EIP-2612 Permit typehash.
    bytes32 public constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

    /// @notice EIP-3009 typehash, 0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267.
    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );

    /// @notice EIP-3009 typehash, 0xd099cc98ef71107a616c4f0f941f04c322d8e254fe26b3c6668db87aae413de8.
    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );

    /// @notice EIP-3009 typehash, 0x158b0a9edf7a828aad02f63cd515c68ef2f50ba807396f6d12842833a1597429.
    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH =
        keccak256("CancelAuthorization(address authorizer,bytes32 nonce)");

    mapping(address authorizer => mapping(bytes32 nonce => bool used)) private _authorizationStates;
    mapping(address account => bool) private _blacklisted;

    /// @notice May reassign `pauser` and `blacklister` (FiatToken's owner).
    address public owner;
    /// @notice May pause and unpause the token.
    address public pauser;
    /// @notice May blacklist and unblacklist addresses.
    address public blacklister;
    /// @notice While true every transfer, approval and authorization reverts.
    bool public paused;

    /// @notice FiatToken v2.2 events of the same names.
    event Blacklisted(address indexed account);
    event UnBlacklisted(address indexed account);
    event BlacklisterChanged(address indexed newBlacklister);
    event Pause();
    event Unpause();
    event PauserChanged(address indexed newAddress);

    /// @notice EIP-3009: emitted when an authorization nonce is consumed by a transfer.
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
    /// @notice EIP-3009: emitted when an authorizer cancels an unused nonce.
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);

    /// @notice EIP-2612: `block.timestamp > deadline`.
    error ERC2612ExpiredSignature(uint256 deadline);
    /// @notice EIP-2612: the permit was not signed by `owner`.
    error ERC2612InvalidSigner(address signer, address owner);
    /// @notice EIP-3009: `block.timestamp <= validAfter`.
    error AuthorizationNotYetValid();
    /// @notice EIP-3009: `block.timestamp >= validBefore`.
    error AuthorizationExpired();
    /// @notice EIP-3009: the nonce was already used or cancelled for this authorizer.
    error AuthorizationUsedOrCanceled();
    /// @notice EIP-3009: the signature does not recover to the authorizer.
    error InvalidAuthorizationSignature();
    /// @notice EIP-3009: `receiveWithAuthorization` called by someone other than the payee.
    error CallerMustBePayee();

    /// @param domainName EIP-712 domain name, also the ERC-20 name ("USD Coin" on Base, "USDC" on Base Sepolia).
    /// @param domainVersion EIP-712 domain version ("2" for FiatToken v2.x).
    constructor(string memory domainName, string memory domainVersion)
        ERC20(domainName, "USDC")
        EIP712(domainName, domainVersion)
    {
        owner = msg.sender;
        pauser = msg.sender;
        blacklister = msg.sender;
    }

    modifier onlyOwner() {
        require(msg.sender == owner, "Ownable: caller is not the owner");
        _;
    }

    modifier whenNotPaused() {
        require(!paused, "Pausable: paused");
        _;
    }

    modifier notBlacklisted(address account) {
        require(!_blacklisted[account], "Blacklistable: account is blacklisted");
        _;
    }

    /// @notice Whether `account` is blacklisted.
    function isBlacklisted(address account) external view returns (bool) {
        return _blacklisted[account];
    }

    /// @notice Blacklists `account`; only the blacklister.
    function blacklist(address account) external {
        require(msg.sender == blacklister, "Blacklistable: caller is not the blacklister");
        _blacklisted[account] = true;
        emit Blacklisted(account);
    }

    /// @notice Removes `account` from the blacklist; only the blacklister.
    function unBlacklist(address account) external {
        require(msg.sender == blacklister, "Blacklistable: caller is not the blacklister");
        _blacklisted[account] = false;
        emit UnBlacklisted(account);
    }

    /// @notice Sets the blacklister; only the owner.
    function updateBlacklister(address newBlacklister) external onlyOwner {
        require(newBlacklister != address(0), "Blacklistable: new blacklister is the zero address");
        blacklister = newBlacklister;
        emit BlacklisterChanged(newBlacklister);
    }

    /// @notice Pauses every transfer, approval and authorization; only the pauser.
    function pause() external {
        require(msg.sender == pauser, "Pausable: caller is not the pauser");
        paused = true;
        emit Pause();
    }

    /// @notice Ends a pause; only the pauser.
    function unpause() external {
        require(msg.sender == pauser, "Pausable: caller is not the pauser");
        paused = false;
        emit Unpause();
    }

    /// @notice Sets the pauser; only the owner.
    function updatePauser(address newPauser) external onlyOwner {
        require(newPauser != address(0), "Pausable: new pauser is the zero address");
        pauser = newPauser;
        emit PauserChanged(newPauser);
    }

    /// @notice 6, like USDC.
    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice EIP-712 domain version, as FiatTokenV2 exposes it ("2").
    function version() external view returns (string memory) {
        return _EIP712Version();
    }

    /// @dev Every balance change (transfer, transferFrom, mint, EIP-3009) passes here: pause and blacklist.
    function _update(address from, address to, uint256 value)
        internal
        override
        whenNotPaused
        notBlacklisted(from)
        notBlacklisted(to)
    {
        super._update(from, to, value);
    }

    /// @dev FiatToken checks the spender too: a blacklisted caller cannot move others' approved funds.
    function transferFrom(address from, address to, uint256 value)
        public
        override
        notBlacklisted(msg.sender)
        returns (bool)
    {
        return super.transferFrom(from, to, value);
    }

    /// @dev approve and permit: not while paused, not by or for a blacklisted address (FiatToken v2.2).
    function _approve(address owner_, address spender, uint256 value, bool emitEvent)
        internal
        override
        whenNotPaused
        notBlacklisted(owner_)
        notBlacklisted(spender)
    {
        super._approve(owner_, spender, value, emitEvent);
    }

    /// @notice Mints `amount` base units to `to`. Unrestricted: local test chains only.
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    /// @inheritdoc IERC20Permit
    function permit(address holder, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external
    {
        if (block.timestamp > deadline) revert ERC2612ExpiredSignature(deadline);
        bytes32 structHash = keccak256(abi.encode(PERMIT_TYPEHASH, holder, spender, value, _useNonce(holder), deadline));
        address signer = ECDSA.recover(_hashTypedDataV4(structHash), v, r, s);
        if (signer != holder) revert ERC2612InvalidSigner(signer, holder);
        _approve(holder, spender, value);
    }

    /// @inheritdoc IERC20Permit
    function nonces(address holder) public view override(IERC20Permit, Nonces) returns (uint256) {
        return super.nonces(holder);
    }

    /// @inheritdoc IERC20Permit
    function DOMAIN_SEPARATOR() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    /// @notice EIP-3009: whether `nonce` of `authorizer` has been used or cancelled.
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizationStates[authorizer][nonce];
    }

    /// @notice EIP-3009: executes a transfer signed by `from`; anyone may submit it.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        _useAuthorization(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, v, r, s);
        _transfer(from, to, value);
    }

    /// @notice EIP-3009: executes a transfer signed by `from`; only the payee `to` may submit it, which stops
    ///         front-running of an authorization meant for a contract call.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        if (to != msg.sender) revert CallerMustBePayee();
        _useAuthorization(RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, v, r, s);
        _transfer(from, to, value);
    }

    /// @notice EIP-3009: the authorizer cancels an unused nonce.
    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)
        external
        whenNotPaused
    {
        if (_authorizationStates[authorizer][nonce]) revert AuthorizationUsedOrCanceled();
        bytes32 structHash = keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce));
        _requireSigner(structHash, authorizer, v, r, s);
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationCanceled(authorizer, nonce);
    }

    function _useAuthorization(
        bytes32 typehash,
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) private {
        if (block.timestamp <= validAfter) revert AuthorizationNotYetValid();
        if (block.timestamp >= validBefore) revert AuthorizationExpired();
        if (_authorizationStates[from][nonce]) revert AuthorizationUsedOrCanceled();
        bytes32 structHash = keccak256(abi.encode(typehash, from, to, value, validAfter, validBefore, nonce));
        _requireSigner(structHash, from, v, r, s);
        _authorizationStates[from][nonce] = true;
        emit AuthorizationUsed(from, nonce);
    }

    /// @dev An EOA's ECDSA signature, or a contract's ERC-1271 approval of the packed (r, s, v) (FiatToken v2.2).
    function _requireSigner(bytes32 structHash, address expected, uint8 v, bytes32 r, bytes32 s) private view {
        bool ok = SignatureChecker.isValidSignatureNow(expected, _hashTypedDataV4(structHash), abi.encodePacked(r, s, v));
        if (!ok) revert InvalidAuthorizationSignature();
    }
}
