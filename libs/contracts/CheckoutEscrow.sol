// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";

/// @notice The EIP-3009 entry point of USDC (FiatTokenV2) that the escrow pulls funds through.
interface IReceiveWithAuthorization {
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
    ) external;
}

/**
 * @title CheckoutEscrow
 * @notice Holds a checkout's USDC between buyer and seller and enforces the escrow state machine of
 *         docs/architecture.md §7:
 *
 *         | action        | actor                                     | from                        | to                  |
 *         |---------------|-------------------------------------------|-----------------------------|---------------------|
 *         | fund          | buyer (or a relayer for the buyer)        | None                        | Funded              |
 *         | accept        | seller                                    | Funded                      | Accepted            |
 *         | decline       | seller                                    | Funded, Accepted            | Refunded            |
 *         | markDelivered | seller                                    | Accepted                    | Delivered           |
 *         | release       | buyer; anyone after the inspection window | Funded, Accepted, Delivered | Released            |
 *         | cancel        | buyer                                     | Funded                      | Cancelled           |
 *         | dispute       | buyer or seller                           | Accepted, Delivered         | Disputed            |
 *         | resolve       | ARBITER_ROLE                              | Disputed                    | Released / Refunded |
 *
 *         Version 2 (docs/architecture.md §13). Every escrow is created from FundingTerms signed (EIP-712,
 *         domain ("CheckoutEscrow", "2")) by `termsSigner`, the control plane's key; the terms fix the buyer,
 *         seller, amount, inspection window and a funding deadline, so only that buyer (msg.sender of fund,
 *         or the `from` of fundWithAuthorization) can fund them. A party that holds no ETH (an agent's
 *         session signer, a pay-page wallet) signs an EIP-712 EscrowAction instead and anyone (the relayer)
 *         submits it through the `...BySig` twin of the action, which runs the same rules with the signed
 *         `actor` as the caller. Every party event names the acting party in `by`. VOIDER_ROLE may burn
 *         an unfunded escrow id (voidTerms), so terms already handed out can no longer fund it.
 * @dev Amounts are USDC base units (6 decimals); times are unix seconds. Checks run in the order
 *      existence, actor, state, so a wrong actor gets NotBuyer/NotSeller/NotParty whatever the state.
 *      Each action emits exactly one event whose first topic after the signature is the escrow id.
 */
contract CheckoutEscrow is AccessControl, ReentrancyGuard, EIP712 {
    using SafeERC20 for IERC20;

    /// @notice May resolve disputes.
    bytes32 public constant ARBITER_ROLE = keccak256("ARBITER_ROLE");

    /// @notice Upper bound for FundingTerms.inspectionWindow (seconds).
    uint64 public constant MAX_INSPECTION_WINDOW = 365 days;

    /// @notice May burn unfunded escrow ids (voidTerms).
    bytes32 public constant VOIDER_ROLE = keccak256("VOIDER_ROLE");

    /// @notice Longest validity of a signed EscrowAction: `deadline <= block.timestamp + MAX_ACTION_VALIDITY`.
    uint64 public constant MAX_ACTION_VALIDITY = 1 hours;

    /// @notice EIP-712 typehash of FundingTerms.
    bytes32 public constant FUNDING_TERMS_TYPEHASH = keccak256(
        "FundingTerms(bytes32 escrowId,address buyer,address seller,uint256 amount,uint64 inspectionWindow,uint64 deadline)"
    );

    /// @notice EIP-712 typehash of EscrowAction; `action` is an Action value.
    bytes32 public constant ESCROW_ACTION_TYPEHASH =
        keccak256("EscrowAction(bytes32 escrowId,uint8 action,address actor,bytes32 nonce,uint64 deadline)");

    /// @notice Party actions a signed EscrowAction may authorise; numeric values are part of the signed data.
    enum Action {
        Accept,
        Decline,
        MarkDelivered,
        Release,
        Cancel,
        Dispute
    }

    /// @notice Escrow lifecycle; numeric values are part of the ABI (InvalidState, getEscrow).
    enum State {
        None,
        Funded,
        Accepted,
        Delivered,
        Released,
        Refunded,
        Cancelled,
        Disputed,
        Voided
    }

    /// @notice Offer signed by `termsSigner`. Only `buyer` may fund it. `amount` in base units,
    ///         `inspectionWindow` in seconds after delivery, `deadline` the last unix second at which the escrow
    ///         may be funded.
    struct FundingTerms {
        bytes32 escrowId;
        address buyer;
        address seller;
        uint256 amount;
        uint64 inspectionWindow;
        uint64 deadline;
    }

    /// @notice Stored escrow. `deliveredAt` is 0 until markDelivered.
    struct Escrow {
        address buyer;
        address seller;
        uint256 amount;
        uint64 inspectionWindow;
        uint64 deliveredAt;
        State state;
    }

    /// @notice The funded token (USDC).
    IERC20 public immutable usdc;

    /// @notice Key whose EIP-712 signature over FundingTerms authorises funding; rotated by the admin.
    address public termsSigner;

    mapping(bytes32 escrowId => Escrow) private _escrows;

    /// @notice EscrowAction nonces already used (or invalidated), per actor.
    mapping(address actor => mapping(bytes32 nonce => bool)) public actionNonceUsed;

    /// @notice fund / fundWithAuthorization: `amount` base units now held for `buyer` → `seller`.
    event Funded(
        bytes32 indexed escrowId, address indexed buyer, address indexed seller, uint256 amount, uint64 inspectionWindow
    );
    /// @notice The seller (`by`) accepted the order.
    event Accepted(bytes32 indexed escrowId, address by);
    /// @notice The seller (`by`) declined; the buyer was refunded in full.
    event Declined(bytes32 indexed escrowId, address by);
    /// @notice The seller (`by`) marked the order delivered; anyone may release from `autoReleaseAt` (unix seconds).
    event Delivered(bytes32 indexed escrowId, uint64 autoReleaseAt, address by);
    /// @notice The seller was paid; `by` is the buyer or, after the inspection window, anyone.
    event Released(bytes32 indexed escrowId, address by);
    /// @notice The buyer (`by`) cancelled before acceptance; refunded in full.
    event Cancelled(bytes32 indexed escrowId, address by);
    /// @notice `by` (buyer or seller) locked the funds for the arbiter.
    event Disputed(bytes32 indexed escrowId, address by);
    /// @notice The arbiter paid everything to the seller (`toSeller`) or back to the buyer.
    event Resolved(bytes32 indexed escrowId, bool toSeller);
    /// @notice `by` (VOIDER_ROLE) burned an unfunded escrow id; terms under it can no longer fund.
    event TermsVoided(bytes32 indexed escrowId, address by);
    /// @notice `actor` used (or invalidated) EscrowAction `nonce`.
    event ActionNonceUsed(address indexed actor, bytes32 indexed nonce);
    /// @notice Admin rotated the terms signer; terms signed by the previous key stop being accepted.
    event TermsSignerChanged(address indexed previousSigner, address indexed newSigner);

    /// @notice The terms signature does not recover to `termsSigner`.
    error InvalidTermsSignature();
    /// @notice `block.timestamp > terms.deadline`.
    error TermsExpired();
    /// @notice The escrow id was funded before (whatever its state now).
    error AlreadyFunded();
    /// @notice The escrow id was burned by voidTerms.
    error EscrowIdVoided();
    /// @notice fund: msg.sender, or fundWithAuthorization: `from`, is not `terms.buyer`.
    error NotTermsBuyer();
    /// @notice The EscrowAction signature is not valid for `actor` (EOA or ERC-1271).
    error InvalidActionSignature();
    /// @notice The EscrowAction nonce was used (or invalidated) before by this actor.
    error ActionNonceReused();
    /// @notice The EscrowAction deadline has passed.
    error ActionExpired();
    /// @notice The EscrowAction deadline is more than MAX_ACTION_VALIDITY ahead.
    error ActionDeadlineTooFar();
    /// @notice voidTerms caller lacks VOIDER_ROLE.
    error NotVoider();
    error ZeroAmount();
    error InvalidSeller();
    /// @notice `terms.inspectionWindow > MAX_INSPECTION_WINDOW`.
    error InvalidInspectionWindow();
    /// @notice fundWithAuthorization: the EIP-3009 nonce is not fundingTermsDigest(terms).
    error AuthorizationNonceMismatch();
    /// @notice No escrow was ever funded under this id.
    error EscrowNotFound();
    error NotBuyer();
    error NotSeller();
    /// @notice Caller is neither buyer nor seller.
    error NotParty();
    /// @notice Caller lacks ARBITER_ROLE.
    error NotArbiter();
    /// @notice The action is not allowed from `current` (a State value).
    error InvalidState(uint8 current);
    /// @notice A non-buyer tried to release before `deliveredAt + inspectionWindow`.
    error InspectionWindowOpen();
    error ZeroAddress();

    /// @param usdc_ token held in escrow (USDC or TestUSDC).
    /// @param termsSigner_ key that signs FundingTerms.
    /// @param admin DEFAULT_ADMIN_ROLE: rotates the terms signer and manages arbiters.
    /// @param arbiter first holder of ARBITER_ROLE.
    constructor(IERC20 usdc_, address termsSigner_, address admin, address arbiter) EIP712("CheckoutEscrow", "2") {
        if (address(usdc_) == address(0) || termsSigner_ == address(0) || admin == address(0)) revert ZeroAddress();
        usdc = usdc_;
        termsSigner = termsSigner_;
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        if (arbiter != address(0)) _grantRole(ARBITER_ROLE, arbiter);
        _grantRole(VOIDER_ROLE, termsSigner_);
        emit TermsSignerChanged(address(0), termsSigner_);
    }

    /// @notice Rotates the terms signer. Admin only.
    function setTermsSigner(address newSigner) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (newSigner == address(0)) revert ZeroAddress();
        emit TermsSignerChanged(termsSigner, newSigner);
        termsSigner = newSigner;
    }

    /// @notice The stored escrow (all zero with state None when unknown).
    function getEscrow(bytes32 escrowId) external view returns (Escrow memory) {
        return _escrows[escrowId];
    }

    /// @notice EIP-712 digest the terms signer signs. Also the required EIP-3009 nonce of fundWithAuthorization.
    function fundingTermsDigest(FundingTerms calldata terms) public view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(
                abi.encode(
                    FUNDING_TERMS_TYPEHASH,
                    terms.escrowId,
                    terms.buyer,
                    terms.seller,
                    terms.amount,
                    terms.inspectionWindow,
                    terms.deadline
                )
            )
        );
    }

    /// @notice EIP-712 digest a party signs to authorise `action` on `escrowId` through the `...BySig` functions.
    function escrowActionDigest(bytes32 escrowId, Action action, address actor, bytes32 nonce, uint64 deadline)
        public
        view
        returns (bytes32)
    {
        return _hashTypedDataV4(keccak256(abi.encode(ESCROW_ACTION_TYPEHASH, escrowId, uint8(action), actor, nonce, deadline)));
    }

    /// @notice Buyer funds the escrow; pulls `terms.amount` from msg.sender (needs an allowance or permit).
    /// @dev Reverts InvalidTermsSignature, TermsExpired, NotTermsBuyer, AlreadyFunded, EscrowIdVoided,
    ///      ZeroAmount, InvalidSeller, InvalidInspectionWindow, or the token's transfer error.
    function fund(FundingTerms calldata terms, bytes calldata termsSignature) external nonReentrant {
        _open(terms, termsSignature, msg.sender);
        usdc.safeTransferFrom(msg.sender, address(this), terms.amount);
    }

    /// @notice Funds the escrow for `from` with an EIP-3009 ReceiveWithAuthorization signed by `from`, so a
    ///         relayer can submit it and pay gas (docs/architecture.md §7). `from` must be `terms.buyer`.
    /// @dev `nonce` must equal fundingTermsDigest(terms) (else AuthorizationNonceMismatch): this binds the
    ///      buyer's authorization to these exact terms, so a copied authorization cannot fund another escrow.
    ///      validAfter/validBefore are checked by the token only; they need not match `terms.deadline`,
    ///      which the escrow enforces on its own. Token errors (expired, used, bad signature) bubble up.
    function fundWithAuthorization(
        FundingTerms calldata terms,
        bytes calldata termsSignature,
        address from,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external nonReentrant {
        bytes32 digest = _open(terms, termsSignature, from);
        if (nonce != digest) revert AuthorizationNonceMismatch();
        IReceiveWithAuthorization(address(usdc)).receiveWithAuthorization(
            from, address(this), terms.amount, validAfter, validBefore, nonce, v, r, s
        );
    }

    /// @notice Seller accepts the order. Funded → Accepted.
    function accept(bytes32 escrowId) external {
        _accept(escrowId, msg.sender);
    }

    /// @notice Seller declines; the buyer is refunded in full. Funded | Accepted → Refunded.
    function decline(bytes32 escrowId) external nonReentrant {
        _decline(escrowId, msg.sender);
    }

    /// @notice Seller marks the order delivered; starts the inspection window. Accepted → Delivered.
    function markDelivered(bytes32 escrowId) external {
        _markDelivered(escrowId, msg.sender);
    }

    /// @notice Pays the seller. The buyer may release from Funded, Accepted or Delivered; anyone may release
    ///         a Delivered escrow once `block.timestamp >= deliveredAt + inspectionWindow` (docs/architecture.md §7).
    /// @dev A non-buyer gets NotBuyer unless the escrow is Delivered, then InspectionWindowOpen while open.
    function release(bytes32 escrowId) external nonReentrant {
        _release(escrowId, msg.sender);
    }

    /// @notice Buyer cancels before the seller accepted; full refund. Funded → Cancelled.
    function cancel(bytes32 escrowId) external nonReentrant {
        _cancel(escrowId, msg.sender);
    }

    /// @notice Buyer or seller locks the funds for the arbiter. Accepted | Delivered → Disputed.
    function dispute(bytes32 escrowId) external {
        _dispute(escrowId, msg.sender);
    }

    /// @notice accept, authorised by `actor`'s EscrowAction signature and submitted by anyone.
    /// @dev Signature checks (ActionExpired, ActionDeadlineTooFar, ActionNonceReused, InvalidActionSignature)
    ///      run first, then the same rules as accept with `actor` as the caller. Same for every ...BySig.
    function acceptBySig(bytes32 escrowId, address actor, bytes32 nonce, uint64 deadline, bytes calldata signature)
        external
    {
        _useActionSignature(escrowId, Action.Accept, actor, nonce, deadline, signature);
        _accept(escrowId, actor);
    }

    /// @notice decline, authorised by `actor`'s EscrowAction signature.
    function declineBySig(bytes32 escrowId, address actor, bytes32 nonce, uint64 deadline, bytes calldata signature)
        external
        nonReentrant
    {
        _useActionSignature(escrowId, Action.Decline, actor, nonce, deadline, signature);
        _decline(escrowId, actor);
    }

    /// @notice markDelivered, authorised by `actor`'s EscrowAction signature.
    function markDeliveredBySig(
        bytes32 escrowId,
        address actor,
        bytes32 nonce,
        uint64 deadline,
        bytes calldata signature
    ) external {
        _useActionSignature(escrowId, Action.MarkDelivered, actor, nonce, deadline, signature);
        _markDelivered(escrowId, actor);
    }

    /// @notice release, authorised by `actor`'s EscrowAction signature.
    function releaseBySig(bytes32 escrowId, address actor, bytes32 nonce, uint64 deadline, bytes calldata signature)
        external
        nonReentrant
    {
        _useActionSignature(escrowId, Action.Release, actor, nonce, deadline, signature);
        _release(escrowId, actor);
    }

    /// @notice cancel, authorised by `actor`'s EscrowAction signature.
    function cancelBySig(bytes32 escrowId, address actor, bytes32 nonce, uint64 deadline, bytes calldata signature)
        external
        nonReentrant
    {
        _useActionSignature(escrowId, Action.Cancel, actor, nonce, deadline, signature);
        _cancel(escrowId, actor);
    }

    /// @notice dispute, authorised by `actor`'s EscrowAction signature.
    function disputeBySig(bytes32 escrowId, address actor, bytes32 nonce, uint64 deadline, bytes calldata signature)
        external
    {
        _useActionSignature(escrowId, Action.Dispute, actor, nonce, deadline, signature);
        _dispute(escrowId, actor);
    }

    /// @notice The caller gives up an EscrowAction nonce it signed but no longer wants used.
    function invalidateActionNonce(bytes32 nonce) external {
        if (actionNonceUsed[msg.sender][nonce]) revert ActionNonceReused();
        actionNonceUsed[msg.sender][nonce] = true;
        emit ActionNonceUsed(msg.sender, nonce);
    }

    /// @notice Burns an escrow id that was never funded, so terms issued under it cannot fund it any more
    ///         (an invoice voided, a checkout re-issued under a new id). VOIDER_ROLE only.
    /// @dev Reverts NotVoider, AlreadyFunded when it was funded, EscrowIdVoided when already voided.
    function voidTerms(bytes32 escrowId) external {
        if (!hasRole(VOIDER_ROLE, msg.sender)) revert NotVoider();
        Escrow storage e = _escrows[escrowId];
        if (e.state == State.Voided) revert EscrowIdVoided();
        if (e.state != State.None) revert AlreadyFunded();
        e.state = State.Voided;
        emit TermsVoided(escrowId, msg.sender);
    }

    /// @notice Arbiter settles a dispute: all to the seller (Released) or all back to the buyer (Refunded).
    function resolve(bytes32 escrowId, bool toSeller) external nonReentrant {
        Escrow storage e = _existing(escrowId);
        if (!hasRole(ARBITER_ROLE, msg.sender)) revert NotArbiter();
        _requireState(e, State.Disputed);
        e.state = toSeller ? State.Released : State.Refunded;
        emit Resolved(escrowId, toSeller);
        usdc.safeTransfer(toSeller ? e.seller : e.buyer, e.amount);
    }

    function _accept(bytes32 escrowId, address by) private {
        Escrow storage e = _existing(escrowId);
        if (by != e.seller) revert NotSeller();
        _requireState(e, State.Funded);
        e.state = State.Accepted;
        emit Accepted(escrowId, by);
    }

    function _decline(bytes32 escrowId, address by) private {
        Escrow storage e = _existing(escrowId);
        if (by != e.seller) revert NotSeller();
        if (e.state != State.Funded && e.state != State.Accepted) revert InvalidState(uint8(e.state));
        e.state = State.Refunded;
        emit Declined(escrowId, by);
        usdc.safeTransfer(e.buyer, e.amount);
    }

    function _markDelivered(bytes32 escrowId, address by) private {
        Escrow storage e = _existing(escrowId);
        if (by != e.seller) revert NotSeller();
        _requireState(e, State.Accepted);
        e.state = State.Delivered;
        e.deliveredAt = uint64(block.timestamp);
        emit Delivered(escrowId, e.deliveredAt + e.inspectionWindow, by);
    }

    function _release(bytes32 escrowId, address by) private {
        Escrow storage e = _existing(escrowId);
        if (by == e.buyer) {
            if (e.state != State.Funded && e.state != State.Accepted && e.state != State.Delivered) {
                revert InvalidState(uint8(e.state));
            }
        } else {
            if (e.state != State.Delivered) revert NotBuyer();
            if (block.timestamp < uint256(e.deliveredAt) + e.inspectionWindow) revert InspectionWindowOpen();
        }
        e.state = State.Released;
        emit Released(escrowId, by);
        usdc.safeTransfer(e.seller, e.amount);
    }

    function _cancel(bytes32 escrowId, address by) private {
        Escrow storage e = _existing(escrowId);
        if (by != e.buyer) revert NotBuyer();
        _requireState(e, State.Funded);
        e.state = State.Cancelled;
        emit Cancelled(escrowId, by);
        usdc.safeTransfer(e.buyer, e.amount);
    }

    function _dispute(bytes32 escrowId, address by) private {
        Escrow storage e = _existing(escrowId);
        if (by != e.buyer && by != e.seller) revert NotParty();
        if (e.state != State.Accepted && e.state != State.Delivered) revert InvalidState(uint8(e.state));
        e.state = State.Disputed;
        emit Disputed(escrowId, by);
    }

    function _useActionSignature(
        bytes32 escrowId,
        Action action,
        address actor,
        bytes32 nonce,
        uint64 deadline,
        bytes calldata signature
    ) private {
        if (block.timestamp > deadline) revert ActionExpired();
        if (deadline > block.timestamp + MAX_ACTION_VALIDITY) revert ActionDeadlineTooFar();
        if (actionNonceUsed[actor][nonce]) revert ActionNonceReused();
        bytes32 digest = escrowActionDigest(escrowId, action, actor, nonce, deadline);
        if (!SignatureChecker.isValidSignatureNowCalldata(actor, digest, signature)) revert InvalidActionSignature();
        actionNonceUsed[actor][nonce] = true;
        emit ActionNonceUsed(actor, nonce);
    }

    function _open(FundingTerms calldata terms, bytes calldata termsSignature, address buyer)
        private
        returns (bytes32 digest)
    {
        digest = fundingTermsDigest(terms);
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecoverCalldata(digest, termsSignature);
        if (err != ECDSA.RecoverError.NoError || signer != termsSigner) revert InvalidTermsSignature();
        if (block.timestamp > terms.deadline) revert TermsExpired();
        if (buyer != terms.buyer) revert NotTermsBuyer();
        Escrow storage e = _escrows[terms.escrowId];
        if (e.state == State.Voided) revert EscrowIdVoided();
        if (e.state != State.None) revert AlreadyFunded();
        if (terms.amount == 0) revert ZeroAmount();
        if (terms.seller == address(0)) revert InvalidSeller();
        if (terms.inspectionWindow > MAX_INSPECTION_WINDOW) revert InvalidInspectionWindow();
        e.buyer = buyer;
        e.seller = terms.seller;
        e.amount = terms.amount;
        e.inspectionWindow = terms.inspectionWindow;
        e.state = State.Funded;
        emit Funded(terms.escrowId, buyer, terms.seller, terms.amount, terms.inspectionWindow);
    }

    function _existing(bytes32 escrowId) private view returns (Escrow storage e) {
        e = _escrows[escrowId];
        if (e.state == State.None) revert EscrowNotFound();
    }

    function _requireState(Escrow storage e, State expected) private view {
        if (e.state != expected) revert InvalidState(uint8(e.state));
    }
}
