// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

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
 *         DESIGN §7:
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
 *         Every escrow is created from FundingTerms signed (EIP-712, domain ("CheckoutEscrow", "1")) by
 *         `termsSigner`, the control plane's key; the terms fix seller, amount, inspection window and a
 *         funding deadline but not the buyer: whoever pays becomes the buyer. Consequently anyone who sees
 *         terms and signature before they are used (e.g. in the mempool) can fund first and then cancel,
 *         which uses up that escrow id; the control plane must then issue terms under a new id.
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

    /// @notice EIP-712 typehash of FundingTerms.
    bytes32 public constant FUNDING_TERMS_TYPEHASH = keccak256(
        "FundingTerms(bytes32 escrowId,address seller,uint256 amount,uint64 inspectionWindow,uint64 deadline)"
    );

    /// @notice Escrow lifecycle; numeric values are part of the ABI (InvalidState, getEscrow).
    enum State {
        None,
        Funded,
        Accepted,
        Delivered,
        Released,
        Refunded,
        Cancelled,
        Disputed
    }

    /// @notice Offer signed by `termsSigner`. `amount` in base units, `inspectionWindow` in seconds after
    ///         delivery, `deadline` the last unix second at which the escrow may be funded.
    struct FundingTerms {
        bytes32 escrowId;
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

    /// @notice fund / fundWithAuthorization: `amount` base units now held for `buyer` → `seller`.
    event Funded(
        bytes32 indexed escrowId, address indexed buyer, address indexed seller, uint256 amount, uint64 inspectionWindow
    );
    /// @notice The seller accepted the order.
    event Accepted(bytes32 indexed escrowId);
    /// @notice The seller declined; the buyer was refunded in full.
    event Declined(bytes32 indexed escrowId);
    /// @notice The seller marked the order delivered; anyone may release from `autoReleaseAt` (unix seconds).
    event Delivered(bytes32 indexed escrowId, uint64 autoReleaseAt);
    /// @notice The seller was paid; `by` is the buyer or, after the inspection window, anyone.
    event Released(bytes32 indexed escrowId, address by);
    /// @notice The buyer cancelled before acceptance; refunded in full.
    event Cancelled(bytes32 indexed escrowId);
    /// @notice `by` (buyer or seller) locked the funds for the arbiter.
    event Disputed(bytes32 indexed escrowId, address by);
    /// @notice The arbiter paid everything to the seller (`toSeller`) or back to the buyer.
    event Resolved(bytes32 indexed escrowId, bool toSeller);
    /// @notice Admin rotated the terms signer; terms signed by the previous key stop being accepted.
    event TermsSignerChanged(address indexed previousSigner, address indexed newSigner);

    /// @notice The terms signature does not recover to `termsSigner`.
    error InvalidTermsSignature();
    /// @notice `block.timestamp > terms.deadline`.
    error TermsExpired();
    /// @notice The escrow id was funded before (whatever its state now).
    error AlreadyFunded();
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
    constructor(IERC20 usdc_, address termsSigner_, address admin, address arbiter) EIP712("CheckoutEscrow", "1") {
        if (address(usdc_) == address(0) || termsSigner_ == address(0) || admin == address(0)) revert ZeroAddress();
        usdc = usdc_;
        termsSigner = termsSigner_;
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        if (arbiter != address(0)) _grantRole(ARBITER_ROLE, arbiter);
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
                    terms.seller,
                    terms.amount,
                    terms.inspectionWindow,
                    terms.deadline
                )
            )
        );
    }

    /// @notice Buyer funds the escrow; pulls `terms.amount` from msg.sender (needs an allowance or permit).
    /// @dev Reverts InvalidTermsSignature, TermsExpired, AlreadyFunded, ZeroAmount, InvalidSeller,
    ///      InvalidInspectionWindow, or the token's transfer error.
    function fund(FundingTerms calldata terms, bytes calldata termsSignature) external nonReentrant {
        _open(terms, termsSignature, msg.sender);
        usdc.safeTransferFrom(msg.sender, address(this), terms.amount);
    }

    /// @notice Funds the escrow for `from` with an EIP-3009 ReceiveWithAuthorization signed by `from`, so a
    ///         relayer can submit it and pay gas (DESIGN §7). `from` becomes the buyer.
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
        Escrow storage e = _existing(escrowId);
        if (msg.sender != e.seller) revert NotSeller();
        _requireState(e, State.Funded);
        e.state = State.Accepted;
        emit Accepted(escrowId);
    }

    /// @notice Seller declines; the buyer is refunded in full. Funded | Accepted → Refunded.
    function decline(bytes32 escrowId) external nonReentrant {
        Escrow storage e = _existing(escrowId);
        if (msg.sender != e.seller) revert NotSeller();
        if (e.state != State.Funded && e.state != State.Accepted) revert InvalidState(uint8(e.state));
        e.state = State.Refunded;
        emit Declined(escrowId);
        usdc.safeTransfer(e.buyer, e.amount);
    }

    /// @notice Seller marks the order delivered; starts the inspection window. Accepted → Delivered.
    function markDelivered(bytes32 escrowId) external {
        Escrow storage e = _existing(escrowId);
        if (msg.sender != e.seller) revert NotSeller();
        _requireState(e, State.Accepted);
        e.state = State.Delivered;
        e.deliveredAt = uint64(block.timestamp);
        emit Delivered(escrowId, e.deliveredAt + e.inspectionWindow);
    }

    /// @notice Pays the seller. The buyer may release from Funded, Accepted or Delivered; anyone may release
    ///         a Delivered escrow once `block.timestamp >= deliveredAt + inspectionWindow` (DESIGN §7).
    /// @dev A non-buyer gets NotBuyer unless the escrow is Delivered, then InspectionWindowOpen while open.
    function release(bytes32 escrowId) external nonReentrant {
        Escrow storage e = _existing(escrowId);
        if (msg.sender == e.buyer) {
            if (e.state != State.Funded && e.state != State.Accepted && e.state != State.Delivered) {
                revert InvalidState(uint8(e.state));
            }
        } else {
            if (e.state != State.Delivered) revert NotBuyer();
            if (block.timestamp < uint256(e.deliveredAt) + e.inspectionWindow) revert InspectionWindowOpen();
        }
        e.state = State.Released;
        emit Released(escrowId, msg.sender);
        usdc.safeTransfer(e.seller, e.amount);
    }

    /// @notice Buyer cancels before the seller accepted; full refund. Funded → Cancelled.
    function cancel(bytes32 escrowId) external nonReentrant {
        Escrow storage e = _existing(escrowId);
        if (msg.sender != e.buyer) revert NotBuyer();
        _requireState(e, State.Funded);
        e.state = State.Cancelled;
        emit Cancelled(escrowId);
        usdc.safeTransfer(e.buyer, e.amount);
    }

    /// @notice Buyer or seller locks the funds for the arbiter. Accepted | Delivered → Disputed.
    function dispute(bytes32 escrowId) external {
        Escrow storage e = _existing(escrowId);
        if (msg.sender != e.buyer && msg.sender != e.seller) revert NotParty();
        if (e.state != State.Accepted && e.state != State.Delivered) revert InvalidState(uint8(e.state));
        e.state = State.Disputed;
        emit Disputed(escrowId, msg.sender);
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

    function _open(FundingTerms calldata terms, bytes calldata termsSignature, address buyer)
        private
        returns (bytes32 digest)
    {
        digest = fundingTermsDigest(terms);
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecoverCalldata(digest, termsSignature);
        if (err != ECDSA.RecoverError.NoError || signer != termsSigner) revert InvalidTermsSignature();
        if (block.timestamp > terms.deadline) revert TermsExpired();
        Escrow storage e = _escrows[terms.escrowId];
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
