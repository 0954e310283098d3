import { type BaseWallet, Contract, type Log, type Provider, Signature, type Signer, TypedDataEncoder, getAddress, hexlify, isHexString, randomBytes, verifyTypedData } from 'ethers';
import { ChainVerificationError, type ChainVerificationReason } from './errors';
import {
  ESCROW_ACTION_CODES,
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
} from './escrow-types';
import { ESCROW_IFACE, type TxSender } from './tx-sender';
import { type Eip712Domain, RECEIVE_WITH_AUTHORIZATION_TYPES, type UsdcGateway } from './usdc-gateway';

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

/** Address of the deployed escrow. */
export interface EscrowGatewayConfig {
  escrowAddress: string;
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

const PARTY_ACTIONS: ReadonlySet<EscrowPartyAction> = new Set([
  'accept',
  'decline',
  'markDelivered',
  'release',
  'cancel',
  'dispute',
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
 * Typed access to a deployed CheckoutEscrow over ethers v6 (docs/architecture.md §7, §13): the EIP-712
 * funding terms and party actions, the buyer's EIP-3009 funding authorization (through `usdc`), calldata
 * for the relayer queue, decoding and verifying escrow events, reads, and the sends that have a
 * production caller (voidTerms, a party's act, the arbiter's resolve). Amounts are USDC base units
 * (bigint); escrow keys are bytes32 hex (escrowKeyFromId). Sends go through `usdc.sender` (one
 * {@link TxSender} per process, so one wallet's sends never race their nonces). Test-only senders
 * live in `./testing`.
 */
export class EscrowGateway {
  readonly escrowAddress: string;
  private readonly escrow: Contract;
  private readonly sender: TxSender;

  /** Throws TypeError on an invalid address. */
  constructor(
    readonly provider: Provider,
    config: EscrowGatewayConfig,
    readonly usdc: UsdcGateway,
  ) {
    this.escrowAddress = getAddress(config.escrowAddress);
    this.escrow = new Contract(this.escrowAddress, ESCROW_IFACE, provider);
    this.sender = usdc.sender;
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
    const domain = await this.usdc.eip712Domain();
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
    await this.sender.estimate(from, to, data, label);
  }

  /** Calldata of voidTerms(escrowKey) (VOIDER_ROLE only). */
  encodeVoidTerms(escrowKey: string): string {
    return ESCROW_IFACE.encodeFunctionData('voidTerms', [escrowKey]);
  }

  /** Burns an unfunded escrow id (VOIDER_ROLE: the terms signer). Returns the tx hash. */
  voidTerms(voider: BaseWallet, escrowKey: string): Promise<string> {
    return this.sender.send(voider, this.escrowAddress, this.encodeVoidTerms(escrowKey), 'voidTerms');
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

  /** A party's escrow call (accept, decline, markDelivered, release, cancel, dispute). Rejects with TypeError on an unknown action. */
  async act(wallet: BaseWallet, action: EscrowPartyAction, escrowKey: string): Promise<string> {
    if (!PARTY_ACTIONS.has(action)) throw new TypeError(`unknown escrow action: ${String(action)}`);
    return this.sender.send(wallet, this.escrowAddress, ESCROW_IFACE.encodeFunctionData(action, [escrowKey]), action);
  }

  /** The arbiter settles a dispute: all to the seller (true) or back to the buyer (false). */
  resolve(arbiter: BaseWallet, escrowKey: string, toSeller: boolean): Promise<string> {
    return this.sender.send(arbiter, this.escrowAddress, ESCROW_IFACE.encodeFunctionData('resolve', [escrowKey, toSeller]), 'resolve');
  }
}

/** A log as ethers returns it from getLogs or a receipt (only the fields decodeLogs reads). */
export type EscrowLogInput = Pick<Log, 'address' | 'topics' | 'data' | 'transactionHash' | 'index' | 'blockNumber' | 'blockHash'> & {
  removed?: boolean;
};

/** FundingTerms as the contract's struct (checksummed addresses, uint64 fields as bigint). */
export function termsStruct(terms: FundingTerms) {
  return {
    escrowId: terms.escrowKey,
    buyer: getAddress(terms.buyer),
    seller: getAddress(terms.seller),
    amount: terms.amount,
    inspectionWindow: BigInt(terms.inspectionWindow),
    deadline: BigInt(terms.deadline),
  };
}

/** Calldata of CheckoutEscrow.fundWithAuthorization. */
export function encodeFundWithAuthorization(terms: FundingTerms, termsSignature: string, auth: ReceiveAuthorization): string {
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
