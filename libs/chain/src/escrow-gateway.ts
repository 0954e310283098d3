import {
  type BaseWallet,
  Contract,
  type ErrorFragment,
  Interface,
  type Log,
  type Provider,
  Signature,
  type Signer,
  Transaction,
  type TransactionResponse,
  TypedDataEncoder,
  getAddress,
  hexlify,
  isHexString,
  randomBytes,
  verifyTypedData,
  zeroPadValue,
} from 'ethers';
import { CheckoutEscrowArtifact, TestUSDCArtifact } from '@lib/contracts';
import { ChainTxError, ChainVerificationError, type ChainVerificationReason } from './errors';
import {
  ESCROW_STATES,
  type EscrowChainAction,
  type EscrowChainEvent,
  type EscrowEventBase,
  type EscrowPartyAction,
  type FundingTerms,
  type OnChainEscrow,
  type ReceiveAuthorization,
  type SignedEscrowAction,
  type VerifiedAction,
  ESCROW_ACTION_CODES,
} from './escrow-types';

/** EIP-712 domain name of CheckoutEscrow (its constructor: EIP712("CheckoutEscrow", "2")). */
export const ESCROW_EIP712_NAME = 'CheckoutEscrow';
/** EIP-712 domain version of CheckoutEscrow (contract v2, docs/architecture.md §13). */
export const ESCROW_EIP712_VERSION = '2';

/** Longest validity of a signed EscrowAction the contract accepts (CheckoutEscrow.MAX_ACTION_VALIDITY, seconds). */
export const MAX_ESCROW_ACTION_VALIDITY = 3600;

/** EIP-712 types of CheckoutEscrow.FundingTerms (field `escrowId` is FundingTerms.escrowKey). */
export const FUNDING_TERMS_TYPES = {
  FundingTerms: [
    { name: 'escrowId', type: 'bytes32' },
    { name: 'buyer', type: 'address' },
    { name: 'seller', type: 'address' },
    { name: 'amount', type: 'uint256' },
    { name: 'inspectionWindow', type: 'uint64' },
    { name: 'deadline', type: 'uint64' },
  ],
};

/** EIP-712 types of CheckoutEscrow.EscrowAction (`action` is ESCROW_ACTION_CODES[action]). */
export const ESCROW_ACTION_TYPES = {
  EscrowAction: [
    { name: 'escrowId', type: 'bytes32' },
    { name: 'action', type: 'uint8' },
    { name: 'actor', type: 'address' },
    { name: 'nonce', type: 'bytes32' },
    { name: 'deadline', type: 'uint64' },
  ],
};

/** EIP-712 types of EIP-3009 ReceiveWithAuthorization, as USDC FiatTokenV2 hashes them. */
export const RECEIVE_WITH_AUTHORIZATION_TYPES = {
  ReceiveWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
};

/** EIP-712 types of EIP-3009 TransferWithAuthorization (USDC FiatTokenV2). */
export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: RECEIVE_WITH_AUTHORIZATION_TYPES.ReceiveWithAuthorization,
};

/** EIP-712 types of EIP-3009 CancelAuthorization. */
export const CANCEL_AUTHORIZATION_TYPES = {
  CancelAuthorization: [
    { name: 'authorizer', type: 'address' },
    { name: 'nonce', type: 'bytes32' },
  ],
};

/**
 * A signed EIP-3009 TransferWithAuthorization: `value` base units from `from` to `to`, usable once
 * (by anyone) while validAfter < block time < validBefore (unix seconds); `nonce` random bytes32.
 */
export interface TransferAuthorization {
  from: string;
  to: string;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: string;
  signature: string;
}

/** A USDC AuthorizationUsed log: `authorizer`'s `nonce` was consumed by transaction `txHash`. */
export interface AuthorizationUsedLog {
  authorizer: string;
  nonce: string;
  txHash: string;
  blockNumber: number;
  logIndex: number;
}

/** Addresses of the deployed escrow and its USDC token. */
export interface EscrowGatewayConfig {
  escrowAddress: string;
  usdcAddress: string;
  /** USDC's EIP-712 name and version (a chain profile, DESIGN §18); absent = read from the token's name() and version(). */
  usdcDomain?: { name: string; version: string };
}

/**
 * What verifyActionTx must find; `expectedSender` (any case) lists who may have acted (the event's `by`,
 * so relayed signature actions count; the transaction sender for `resolved`), `[]` = nobody.
 */
export interface ActionExpectation {
  escrowKey: string;
  action: EscrowChainAction;
  expectedSender?: readonly string[];
}

/** EIP-712 domain with the chain id as a number. */
export interface Eip712Domain {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: string;
}

/**
 * Everything a wallet needs to sign the buyer's EIP-3009 ReceiveWithAuthorization for a funding (the pay
 * page hands it to `eth_signTypedData_v4`, adding the EIP712Domain type and bigints as decimal strings).
 */
export interface ReceiveAuthorizationRequest {
  domain: Eip712Domain;
  types: typeof RECEIVE_WITH_AUTHORIZATION_TYPES;
  primaryType: 'ReceiveWithAuthorization';
  message: { from: string; to: string; value: bigint; validAfter: bigint; validBefore: bigint; nonce: string };
}

/** A signed, not yet broadcast relayer transaction (docs/architecture.md §5 recovery point "signed"). */
export interface SignedRelayTx {
  rawTx: string;
  txHash: string;
  nonce: number;
}

const PARTY_ACTIONS: ReadonlySet<EscrowPartyAction> = new Set([
  'accept',
  'decline',
  'markDelivered',
  'release',
  'cancel',
  'dispute',
]);

const ESCROW_IFACE = new Interface(CheckoutEscrowArtifact.abi);
const USDC_IFACE = new Interface(TestUSDCArtifact.abi);
const ERRORS_IFACE = new Interface([
  ...new Map(
    [...ESCROW_IFACE.fragments, ...USDC_IFACE.fragments]
      .filter((f): f is ErrorFragment => f.type === 'error')
      .map((f) => [f.format('sighash'), f]),
  ).values(),
]);
const EVENT_ACTIONS = new Map<string, EscrowChainAction>([
  ['Funded', 'funded'],
  ['Accepted', 'accepted'],
  ['Declined', 'declined'],
  ['Delivered', 'delivered'],
  ['Released', 'released'],
  ['Cancelled', 'cancelled'],
  ['Disputed', 'disputed'],
  ['Resolved', 'resolved'],
]);
const EVENT_TOPICS = [...EVENT_ACTIONS.keys()].map((name) => ESCROW_IFACE.getEvent(name)!.topicHash);

/**
 * Typed access to a deployed CheckoutEscrow and its USDC over ethers v6 (docs/architecture.md §7): signing funding
 * terms, decoding and verifying escrow events, reads, and write helpers for the operator CLI, the worker
 * and tests. Amounts are USDC base units (bigint); escrow keys are bytes32 hex (escrowKeyFromId).
 * Write helpers estimate gas first (a would-be revert throws ChainTxError with the decoded custom error),
 * serialise sends per sender address with explicit `pending` nonces (within this instance: share one
 * gateway per process for a hot wallet such as the relayer), wait for one confirmation and return the
 * transaction hash.
 */
export class EscrowGateway {
  readonly escrowAddress: string;
  readonly usdcAddress: string;
  private readonly escrow: Contract;
  private readonly usdc: Contract;
  private readonly sendQueues = new Map<string, Promise<unknown>>();
  private usdcDomainCache?: Promise<Eip712Domain>;
  private readonly configuredUsdcDomain?: { name: string; version: string };

  /** Throws TypeError on an invalid address. */
  constructor(
    readonly provider: Provider,
    config: EscrowGatewayConfig,
  ) {
    this.configuredUsdcDomain = config.usdcDomain;
    this.escrowAddress = getAddress(config.escrowAddress);
    this.usdcAddress = getAddress(config.usdcAddress);
    this.escrow = new Contract(this.escrowAddress, ESCROW_IFACE, provider);
    this.usdc = new Contract(this.usdcAddress, USDC_IFACE, provider);
  }

  /** The escrow's EIP-712 domain on `chainId`. */
  escrowDomain(chainId: number | bigint): Eip712Domain {
    return {
      name: ESCROW_EIP712_NAME,
      version: ESCROW_EIP712_VERSION,
      chainId: Number(chainId),
      verifyingContract: this.escrowAddress,
    };
  }

  /** EIP-712 digest of `terms` (equals CheckoutEscrow.fundingTermsDigest); the EIP-3009 nonce for relayed funding. */
  fundingTermsDigest(terms: FundingTerms, chainId: number | bigint): string {
    return TypedDataEncoder.hash(this.escrowDomain(chainId), FUNDING_TERMS_TYPES, termsStruct(terms));
  }

  /** EIP-712 signature (65-byte hex) of `terms` by the terms signer, for CheckoutEscrow.fund* (docs/architecture.md §7). */
  signFundingTerms(signer: Signer, terms: FundingTerms, chainId: number | bigint): Promise<string> {
    return signer.signTypedData(this.escrowDomain(chainId), FUNDING_TERMS_TYPES, termsStruct(terms));
  }

  /**
   * Typed data the buyer signs so a relayer can fund `terms` gaslessly (EIP-3009 receiveWithAuthorization,
   * docs/architecture.md §7): to = escrow, value = terms.amount, nonce = fundingTermsDigest(terms). Validity defaults to
   * (0, terms.deadline + 1), i.e. exactly the funding window. Reads the token's name()/version() once.
   */
  async receiveAuthorizationRequest(
    from: string,
    terms: FundingTerms,
    validity: { validAfter?: bigint; validBefore?: bigint } = {},
  ): Promise<ReceiveAuthorizationRequest> {
    const domain = await this.usdcDomain();
    return {
      domain,
      types: RECEIVE_WITH_AUTHORIZATION_TYPES,
      primaryType: 'ReceiveWithAuthorization',
      message: {
        from: getAddress(from),
        to: this.escrowAddress,
        value: terms.amount,
        validAfter: validity.validAfter ?? 0n,
        validBefore: validity.validBefore ?? BigInt(terms.deadline) + 1n,
        nonce: this.fundingTermsDigest(terms, domain.chainId),
      },
    };
  }

  /**
   * Pairs a wallet's signature with its request. Throws TypeError when the signature does not recover to
   * `request.message.from` (EIP-3009 would reject it on chain).
   */
  authorizationFromSignature(request: ReceiveAuthorizationRequest, signature: string): ReceiveAuthorization {
    const { domain, types, message } = request;
    const signer = verifyTypedData(domain, types, message, signature);
    if (signer !== message.from) {
      throw new TypeError(`authorization signed by ${signer}, expected ${message.from}`);
    }
    const sig = Signature.from(signature);
    return { ...message, signature: sig.serialized, v: sig.v, r: sig.r, s: sig.s };
  }

  /** The buyer signs the ReceiveWithAuthorization of receiveAuthorizationRequest locally. */
  async signReceiveAuthorization(
    buyer: Signer,
    terms: FundingTerms,
    validity: { validAfter?: bigint; validBefore?: bigint } = {},
  ): Promise<ReceiveAuthorization> {
    const request = await this.receiveAuthorizationRequest(await buyer.getAddress(), terms, validity);
    const signature = await buyer.signTypedData(request.domain, request.types, request.message);
    return this.authorizationFromSignature(request, signature);
  }

  /**
   * The party `actor` signs an EIP-712 EscrowAction for `action` on `escrowKey` (contract v2,
   * docs/architecture.md §13). `nonce` defaults to 32 random bytes, `deadline` (unix seconds) to
   * `now + validitySeconds` (default 600, at most MAX_ESCROW_ACTION_VALIDITY). `now` defaults to the
   * local clock; pass chain time where they differ. Throws TypeError on an unknown action.
   */
  async signEscrowAction(
    actor: Signer,
    action: EscrowPartyAction,
    escrowKey: string,
    options: { nonce?: string; deadline?: number; now?: number; validitySeconds?: number } = {},
  ): Promise<SignedEscrowAction> {
    if (!PARTY_ACTIONS.has(action)) throw new TypeError(`unknown escrow action: ${String(action)}`);
    const validity = Math.min(options.validitySeconds ?? 600, MAX_ESCROW_ACTION_VALIDITY);
    const deadline = options.deadline ?? (options.now ?? Math.floor(Date.now() / 1000)) + validity;
    const nonce = options.nonce ?? hexlify(randomBytes(32));
    const address = getAddress(await actor.getAddress());
    const chainId = (await this.provider.getNetwork()).chainId;
    const message = { escrowId: escrowKey, action: ESCROW_ACTION_CODES[action], actor: address, nonce, deadline: BigInt(deadline) };
    const signature = await actor.signTypedData(this.escrowDomain(chainId), ESCROW_ACTION_TYPES, message);
    return { escrowKey, action, actor: address, nonce, deadline, signature };
  }

  /** Calldata of `signed.action`BySig on the escrow (for the relayer queue). */
  encodeActBySig(signed: SignedEscrowAction): string {
    if (!PARTY_ACTIONS.has(signed.action)) throw new TypeError(`unknown escrow action: ${String(signed.action)}`);
    return ESCROW_IFACE.encodeFunctionData(`${signed.action}BySig`, [signed.escrowKey, signed.actor, signed.nonce, signed.deadline, signed.signature]);
  }

  /** Calldata of fundWithAuthorization (for the relayer queue). */
  encodeFundWithAuthorization(terms: FundingTerms, termsSignature: string, auth: ReceiveAuthorization): string {
    return encodeFundWithAuthorization(terms, termsSignature, auth);
  }

  /** Calldata of a party action sent by its caller, e.g. `release(escrowKey)` (for the relayer queue: auto-release). */
  encodeAct(action: EscrowPartyAction, escrowKey: string): string {
    if (!PARTY_ACTIONS.has(action)) throw new TypeError(`unknown escrow action: ${String(action)}`);
    return ESCROW_IFACE.encodeFunctionData(action, [escrowKey]);
  }

  /**
   * Runs `data` against `to` as `from` without sending it (eth_estimateGas, which executes the call):
   * the check before a relay is stored (docs/architecture.md §16).
   * @throws ChainTxError (with `errorName` when the contract reverted with a custom error) when it would revert.
   */
  async simulate(from: string, to: string, data: string, label: string): Promise<void> {
    await this.estimate(from, to, data, label);
  }

  /** Calldata of voidTerms(escrowKey) (VOIDER_ROLE only). */
  encodeVoidTerms(escrowKey: string): string {
    return ESCROW_IFACE.encodeFunctionData('voidTerms', [escrowKey]);
  }

  /** `submitter` (any account with gas, e.g. the relayer) sends a party's signed action. Returns the tx hash. */
  actBySig(submitter: BaseWallet, signed: SignedEscrowAction): Promise<string> {
    return this.send(submitter, this.escrowAddress, this.encodeActBySig(signed), `${signed.action}BySig`);
  }

  /** Burns an unfunded escrow id (VOIDER_ROLE: the terms signer). Returns the tx hash. */
  voidTerms(voider: BaseWallet, escrowKey: string): Promise<string> {
    return this.send(voider, this.escrowAddress, this.encodeVoidTerms(escrowKey), 'voidTerms');
  }

  /** USDC's EIP-712 domain (name and version read from the token once). */
  usdcEip712Domain(): Promise<Eip712Domain> {
    return this.usdcDomain();
  }

  /**
   * `from` signs an EIP-3009 TransferWithAuthorization of `value` base units to `to` (agent payments,
   * withdrawals; docs/architecture.md §13). `nonce` defaults to 32 random bytes.
   */
  async signTransferAuthorization(
    from: Signer,
    message: { to: string; value: bigint; validAfter?: bigint; validBefore: bigint; nonce?: string },
  ): Promise<TransferAuthorization> {
    const domain = await this.usdcDomain();
    const full = {
      from: getAddress(await from.getAddress()),
      to: getAddress(message.to),
      value: message.value,
      validAfter: message.validAfter ?? 0n,
      validBefore: message.validBefore,
      nonce: message.nonce ?? hexlify(randomBytes(32)),
    };
    const signature = await from.signTypedData(domain, TRANSFER_WITH_AUTHORIZATION_TYPES, full);
    return { ...full, signature: Signature.from(signature).serialized };
  }

  /** Calldata of USDC transferWithAuthorization for a signed authorization (for the relayer queue). */
  encodeTransferWithAuthorization(auth: TransferAuthorization): string {
    const { v, r, s } = Signature.from(auth.signature);
    return USDC_IFACE.encodeFunctionData('transferWithAuthorization', [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, v, r, s]);
  }

  /** `authorizer` signs EIP-3009 CancelAuthorization of `nonce`; returns the calldata of cancelAuthorization. */
  async encodeCancelAuthorization(authorizer: Signer, nonce: string): Promise<string> {
    const domain = await this.usdcDomain();
    const address = getAddress(await authorizer.getAddress());
    const { v, r, s } = Signature.from(await authorizer.signTypedData(domain, CANCEL_AUTHORIZATION_TYPES, { authorizer: address, nonce }));
    return USDC_IFACE.encodeFunctionData('cancelAuthorization', [address, nonce, v, r, s]);
  }

  /** USDC authorizationState: true once `nonce` of `authorizer` was used or cancelled. */
  async authorizationState(authorizer: string, nonce: string, blockTag?: number | 'latest'): Promise<boolean> {
    return (await this.usdc.getFunction('authorizationState').staticCall(authorizer, nonce, { blockTag })) as boolean;
  }

  /**
   * USDC AuthorizationUsed and AuthorizationCanceled logs (EIP-3009) in blocks [fromBlock, toBlock], in
   * chain order; only those of `authorizer` when given (the indexed topic, so the node filters).
   */
  async getAuthorizationLogs(fromBlock: number, toBlock: number, authorizer?: string): Promise<Array<AuthorizationUsedLog & { kind: 'used' | 'canceled' }>> {
    const used = USDC_IFACE.getEvent('AuthorizationUsed')!.topicHash;
    const canceled = USDC_IFACE.getEvent('AuthorizationCanceled')!.topicHash;
    const topics = authorizer ? [[used, canceled], zeroPadValue(getAddress(authorizer), 32)] : [[used, canceled]];
    const logs = await this.provider.getLogs({ address: this.usdcAddress, fromBlock, toBlock, topics });
    return logs
      .filter((l) => !l.removed)
      .map((l) => ({
        kind: l.topics[0] === used ? ('used' as const) : ('canceled' as const),
        authorizer: getAddress('0x' + l.topics[1].slice(26)),
        nonce: l.topics[2].toLowerCase(),
        txHash: l.transactionHash,
        blockNumber: l.blockNumber,
        logIndex: l.index,
      }));
  }

  /**
   * The USDC `Transfer` logs of transaction `txHash` (refund verification, DESIGN §21), with its
   * receipt's status and block; null when the node has no receipt (not mined, or removed by a reorg).
   * Only logs emitted by this gateway's USDC contract are listed; `from`/`to` checksummed, `value` base units.
   */
  async getUsdcTransfers(txHash: string): Promise<{
    status: number;
    blockNumber: number;
    blockHash: string;
    transfers: Array<{ logIndex: number; from: string; to: string; value: bigint }>;
  } | null> {
    const receipt = await this.provider.getTransactionReceipt(txHash);
    if (!receipt) return null;
    const topic = USDC_IFACE.getEvent('Transfer')!.topicHash;
    const transfers = receipt.logs
      .filter((l) => l.address.toLowerCase() === this.usdcAddress.toLowerCase() && l.topics[0] === topic)
      .map((l) => {
        const parsed = USDC_IFACE.parseLog({ topics: [...l.topics], data: l.data })!;
        return { logIndex: l.index, from: getAddress(parsed.args.from as string), to: getAddress(parsed.args.to as string), value: parsed.args.value as bigint };
      });
    return { status: receipt.status ?? 0, blockNumber: receipt.blockNumber, blockHash: receipt.blockHash, transfers };
  }

  /** Calldata of a plain USDC transfer (local-chain top-ups). */
  encodeUsdcTransfer(to: string, amount: bigint): string {
    return USDC_IFACE.encodeFunctionData('transfer', [getAddress(to), amount]);
  }

  /** `from` sends a plain USDC transfer and waits for it; returns the tx hash (local-chain top-ups, tests). */
  usdcTransfer(from: BaseWallet, to: string, amount: bigint): Promise<string> {
    return this.send(from, this.usdcAddress, this.encodeUsdcTransfer(to, amount), 'transfer');
  }

  /**
   * Decodes the CheckoutEscrow events among `logs`, in input order. Logs of other addresses, removed
   * logs and non-escrow events of the escrow (roles, terms signer) are skipped.
   */
  decodeLogs(logs: readonly EscrowLogInput[]): EscrowChainEvent[] {
    const events: EscrowChainEvent[] = [];
    for (const log of logs) {
      if (log.removed || log.address.toLowerCase() !== this.escrowAddress.toLowerCase()) continue;
      let parsed;
      try {
        parsed = ESCROW_IFACE.parseLog({ topics: [...log.topics], data: log.data });
      } catch {
        continue;
      }
      const action = parsed && EVENT_ACTIONS.get(parsed.name);
      if (!parsed || !action) continue;
      const a = parsed.args.toObject() as Record<string, unknown>;
      const base: EscrowEventBase = {
        escrowKey: (a.escrowId as string).toLowerCase(),
        txHash: log.transactionHash,
        logIndex: log.index,
        blockNumber: log.blockNumber,
        blockHash: log.blockHash,
      };
      switch (action) {
        case 'funded':
          events.push({
            ...base,
            action,
            buyer: getAddress(a.buyer as string),
            seller: getAddress(a.seller as string),
            amount: a.amount as bigint,
            inspectionWindow: Number(a.inspectionWindow as bigint),
            by: getAddress(a.buyer as string),
          });
          break;
        case 'delivered':
          events.push({ ...base, action, autoReleaseAt: Number(a.autoReleaseAt as bigint), by: getAddress(a.by as string) });
          break;
        case 'resolved':
          events.push({ ...base, action, toSeller: a.toSeller as boolean });
          break;
        default:
          events.push({ ...base, action, by: getAddress(a.by as string) });
      }
    }
    return events;
  }

  /** Escrow events in blocks [fromBlock, toBlock] (inclusive), ordered by block and log index. */
  async getEscrowEvents(fromBlock: number, toBlock: number | 'latest'): Promise<EscrowChainEvent[]> {
    const logs = await this.provider.getLogs({
      address: this.escrowAddress,
      fromBlock,
      toBlock,
      topics: [EVENT_TOPICS],
    });
    return this.decodeLogs(logs);
  }

  /**
   * Proves that `txHash` performed `expected.action` on `expected.escrowKey` (docs/architecture.md §7): the receipt
   * exists and succeeded, `to` is the escrow, it emitted that event for that escrow, and (when given) the
   * party that acted (the event's `by`, contract v2; the sender for `resolved`) is in `expectedSender`. Throws ChainVerificationError with reason not_found | pending |
   * failed | wrong_contract | wrong_escrow | wrong_action | wrong_sender, checked in that order.
   */
  async verifyActionTx(txHash: string, expected: ActionExpectation): Promise<VerifiedAction> {
    const fail = (reason: ChainVerificationReason, message: string) =>
      new ChainVerificationError(reason, message, txHash);
    if (!isHexString(txHash, 32)) throw fail('not_found', `${txHash} is not a transaction hash`);

    let receipt = await this.provider.getTransactionReceipt(txHash);
    if (!receipt) {
      const tx = await this.provider.getTransaction(txHash);
      if (!tx) throw fail('not_found', `transaction ${txHash} is unknown to the node`);
      if (tx.blockNumber != null) receipt = await this.provider.getTransactionReceipt(txHash);
      if (!receipt) throw fail('pending', `transaction ${txHash} is not mined yet`);
    }
    if (receipt.status !== 1) throw fail('failed', `transaction ${txHash} reverted`);
    if (!receipt.to || receipt.to.toLowerCase() !== this.escrowAddress.toLowerCase()) {
      throw fail('wrong_contract', `transaction ${txHash} was sent to ${receipt.to ?? 'no contract'}, not the escrow ${this.escrowAddress}`);
    }

    const events = this.decodeLogs(receipt.logs);
    const key = expected.escrowKey.toLowerCase();
    const mine = events.filter((e) => e.escrowKey === key);
    if (events.length === 0) throw fail('wrong_action', `transaction ${txHash} emitted no escrow event`);
    if (mine.length === 0) {
      throw fail('wrong_escrow', `transaction ${txHash} acted on escrow ${events[0].escrowKey}, not ${key}`);
    }
    const event = mine.find((e) => e.action === expected.action);
    if (!event) {
      throw fail('wrong_action', `transaction ${txHash} is '${mine.map((e) => e.action).join(', ')}', not '${expected.action}'`);
    }
    const from = getAddress(receipt.from);
    const by = 'by' in event ? event.by : from;
    if (expected.expectedSender && !expected.expectedSender.some((s) => s.toLowerCase() === by.toLowerCase())) {
      throw fail('wrong_sender', `transaction ${txHash} acted as ${by}, who may not perform '${expected.action}' on this escrow`);
    }
    return { event, from, by, blockNumber: receipt.blockNumber, blockHash: receipt.blockHash };
  }

  /** CheckoutEscrow.getEscrow (state 'none' and zero fields when unknown), optionally at `blockTag`. */
  async getOnChainEscrow(escrowKey: string, blockTag?: number | 'latest'): Promise<OnChainEscrow> {
    const e = (await this.escrow.getFunction('getEscrow').staticCall(escrowKey, { blockTag })) as {
      buyer: string;
      seller: string;
      amount: bigint;
      inspectionWindow: bigint;
      deliveredAt: bigint;
      state: bigint;
    };
    return {
      buyer: getAddress(e.buyer),
      seller: getAddress(e.seller),
      amount: e.amount,
      inspectionWindow: Number(e.inspectionWindow),
      deliveredAt: Number(e.deliveredAt),
      state: ESCROW_STATES[Number(e.state)],
    };
  }

  /** USDC balance of `address` in base units, at `blockTag` (a block number) or the latest block. */
  async usdcBalance(address: string, blockTag?: number): Promise<bigint> {
    return (await this.usdc.getFunction('balanceOf').staticCall(address, blockTag === undefined ? {} : { blockTag })) as bigint;
  }

  /** Latest block number. */
  headBlock(): Promise<number> {
    return this.provider.getBlockNumber();
  }

  /** Hash of block `blockNumber`, null when it does not exist (yet). */
  async getBlockHash(blockNumber: number): Promise<string | null> {
    return (await this.provider.getBlock(blockNumber))?.hash ?? null;
  }

  /** Timestamp (unix seconds) of the latest block: the clock the contract's deadlines use. */
  async headTimestamp(): Promise<number> {
    const block = await this.provider.getBlock('latest');
    if (!block) throw new Error('node returned no latest block');
    return block.timestamp;
  }

  /**
   * Buyer approves (when the allowance is short) and calls fund(terms, termsSignature). Returns the fund
   * tx hash. Concurrent calls for one buyer run one after the other, so approvals do not race.
   */
  fundWithTerms(buyer: BaseWallet, terms: FundingTerms, termsSignature: string): Promise<string> {
    return this.serialize(`fund:${buyer.address}`, async () => {
      const allowance = (await this.usdc.getFunction('allowance').staticCall(buyer.address, this.escrowAddress)) as bigint;
      if (allowance < terms.amount) {
        const approve = USDC_IFACE.encodeFunctionData('approve', [this.escrowAddress, terms.amount]);
        await this.send(buyer, this.usdcAddress, approve, 'approve');
      }
      const fund = ESCROW_IFACE.encodeFunctionData('fund', [termsStruct(terms), termsSignature]);
      return this.send(buyer, this.escrowAddress, fund, 'fund');
    });
  }

  /** Gasless funding (docs/architecture.md §7): `buyer` signs the EIP-3009 authorization, `relayer` submits and pays gas. */
  async fundWithAuthorization(
    relayer: BaseWallet,
    buyer: BaseWallet,
    terms: FundingTerms,
    termsSignature: string,
  ): Promise<string> {
    const auth = await this.signReceiveAuthorization(buyer, terms);
    return this.submitFundWithAuthorization(relayer, terms, termsSignature, auth);
  }

  /** Relayer submits fundWithAuthorization with an authorization signed elsewhere (the pay page). */
  submitFundWithAuthorization(
    relayer: BaseWallet,
    terms: FundingTerms,
    termsSignature: string,
    auth: ReceiveAuthorization,
  ): Promise<string> {
    return this.send(relayer, this.escrowAddress, encodeFundWithAuthorization(terms, termsSignature, auth), 'fundWithAuthorization');
  }

  /**
   * Signs (without broadcasting) the relayer's fundWithAuthorization transaction, so the caller can store
   * it before broadcasting and rebroadcast the same bytes on retry (docs/architecture.md §5). Uses `nonce` or the
   * relayer's pending nonce; broadcast it before sending anything else from the relayer.
   * Throws ChainTxError when the call would revert.
   */
  async signFundWithAuthorizationTx(
    relayer: BaseWallet,
    terms: FundingTerms,
    termsSignature: string,
    auth: ReceiveAuthorization,
    options: { nonce?: number } = {},
  ): Promise<SignedRelayTx> {
    const signer = relayer.connect(this.provider);
    const data = encodeFundWithAuthorization(terms, termsSignature, auth);
    return this.serialize(signer.address, async () => {
      const gasLimit = await this.estimate(signer.address, this.escrowAddress, data, 'fundWithAuthorization');
      const nonce = options.nonce ?? (await this.provider.getTransactionCount(signer.address, 'pending'));
      const populated = await signer.populateTransaction({ to: this.escrowAddress, data, nonce, gasLimit });
      const rawTx = await signer.signTransaction(populated);
      return { rawTx, txHash: Transaction.from(rawTx).hash!, nonce };
    });
  }

  /**
   * Broadcasts a signed transaction (idempotent: an already known or mined hash is not an error) and
   * waits for it. Returns its hash; throws ChainTxError when the node refuses it or it reverts.
   */
  async broadcastSignedTx(rawTx: string): Promise<string> {
    const hash = Transaction.from(rawTx).hash!;
    if (!(await this.provider.getTransactionReceipt(hash))) {
      try {
        await this.provider.broadcastTransaction(rawTx);
      } catch (err) {
        if (!(await this.provider.getTransaction(hash))) throw toTxError('broadcast', err, null);
      }
    }
    const receipt = await this.provider.waitForTransaction(hash);
    if (!receipt || receipt.status !== 1) {
      throw new ChainTxError(`broadcast: transaction ${hash} reverted`, null, [], null, hash);
    }
    return hash;
  }

  /** A party's escrow call (accept, decline, markDelivered, release, cancel, dispute). Rejects with TypeError on an unknown action. */
  async act(wallet: BaseWallet, action: EscrowPartyAction, escrowKey: string): Promise<string> {
    if (!PARTY_ACTIONS.has(action)) throw new TypeError(`unknown escrow action: ${String(action)}`);
    return this.send(wallet, this.escrowAddress, ESCROW_IFACE.encodeFunctionData(action, [escrowKey]), action);
  }

  /** The arbiter settles a dispute: all to the seller (true) or back to the buyer (false). */
  resolve(arbiter: BaseWallet, escrowKey: string, toSeller: boolean): Promise<string> {
    return this.send(arbiter, this.escrowAddress, ESCROW_IFACE.encodeFunctionData('resolve', [escrowKey, toSeller]), 'resolve');
  }

  private usdcDomain(): Promise<Eip712Domain> {
    this.usdcDomainCache ??= (async () => {
      const configured = this.configuredUsdcDomain;
      if (configured) {
        const network = await this.provider.getNetwork();
        return { ...configured, chainId: Number(network.chainId), verifyingContract: this.usdcAddress };
      }
      const [name, version, network] = await Promise.all([
        this.usdc.getFunction('name').staticCall() as Promise<string>,
        this.usdc.getFunction('version').staticCall() as Promise<string>,
        this.provider.getNetwork(),
      ]);
      return { name, version, chainId: Number(network.chainId), verifyingContract: this.usdcAddress };
    })();
    this.usdcDomainCache.catch(() => (this.usdcDomainCache = undefined));
    return this.usdcDomainCache;
  }

  private async send(wallet: BaseWallet, to: string, data: string, label: string): Promise<string> {
    const signer = wallet.connect(this.provider);
    const response: TransactionResponse = await this.serialize(signer.address, async () => {
      const gasLimit = await this.estimate(signer.address, to, data, label);
      const nonce = await this.provider.getTransactionCount(signer.address, 'pending');
      try {
        return await signer.sendTransaction({ to, data, nonce, gasLimit });
      } catch (err) {
        throw toTxError(label, err, null);
      }
    });
    try {
      // The provider's own receipt poll first (createProvider: ethers' block-event wait can miss the block
      // on a chain that mines on demand); then wait() finds the receipt at once and decodes a revert.
      await this.provider.waitForTransaction(response.hash);
      const receipt = await response.wait();
      if (!receipt) throw new Error('no receipt');
    } catch (err) {
      throw toTxError(label, err, response.hash);
    }
    return response.hash;
  }

  private async estimate(from: string, to: string, data: string, label: string): Promise<bigint> {
    try {
      const gas = await this.provider.estimateGas({ from, to, data });
      return gas + gas / 5n;
    } catch (err) {
      throw toTxError(label, err, null);
    }
  }

  private serialize<T>(lockKey: string, fn: () => Promise<T>): Promise<T> {
    const key = lockKey.toLowerCase();
    const run = (this.sendQueues.get(key) ?? Promise.resolve()).then(fn, fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.sendQueues.set(key, tail);
    void tail.then(() => {
      if (this.sendQueues.get(key) === tail) this.sendQueues.delete(key);
    });
    return run;
  }
}

/** A log as ethers returns it from getLogs or a receipt (only the fields decodeLogs reads). */
export type EscrowLogInput = Pick<Log, 'address' | 'topics' | 'data' | 'transactionHash' | 'index' | 'blockNumber' | 'blockHash'> & {
  removed?: boolean;
};

function termsStruct(terms: FundingTerms) {
  return {
    escrowId: terms.escrowKey,
    buyer: getAddress(terms.buyer),
    seller: getAddress(terms.seller),
    amount: terms.amount,
    inspectionWindow: BigInt(terms.inspectionWindow),
    deadline: BigInt(terms.deadline),
  };
}

function encodeFundWithAuthorization(terms: FundingTerms, termsSignature: string, auth: ReceiveAuthorization): string {
  return ESCROW_IFACE.encodeFunctionData('fundWithAuthorization', [
    termsStruct(terms),
    termsSignature,
    auth.from,
    auth.validAfter,
    auth.validBefore,
    auth.nonce,
    auth.v,
    auth.r,
    auth.s,
  ]);
}

/**
 * Wraps an ethers send/estimate error as ChainTxError with the decoded custom error of the escrow or the
 * token when the revert data carries one; `txHash` only when the transaction exists.
 */
export function toTxError(label: string, err: unknown, txHash: string | null): ChainTxError {
  const data = revertData(err);
  let errorName: string | null = null;
  let errorArgs: unknown[] = [];
  if (data && data !== '0x') {
    try {
      const parsed = ERRORS_IFACE.parseError(data);
      if (parsed) {
        errorName = parsed.name;
        errorArgs = [...parsed.args];
      }
    } catch {
      errorName = null;
    }
  }
  const detail = errorName
    ? `${errorName}(${errorArgs.map(String).join(', ')})`
    : txHash
      ? 'reverted on chain'
      : (err as Error)?.message ?? String(err);
  return new ChainTxError(`${label}: ${detail}`, errorName, errorArgs, data, txHash, { cause: err });
}

function revertData(err: unknown): string | null {
  const seen = new Set<unknown>();
  const stack: unknown[] = [err];
  while (stack.length > 0) {
    const e = stack.pop();
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    const rec = e as Record<string, unknown>;
    if (typeof rec.data === 'string' && isHexString(rec.data)) return rec.data;
    stack.push(rec.error, rec.info, rec.cause);
  }
  return null;
}
