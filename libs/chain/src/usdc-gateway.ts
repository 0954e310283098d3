import { type BaseWallet, Contract, getAddress, hexlify, type Provider, randomBytes, Signature, type Signer, zeroPadValue } from 'ethers';
import { TxSender, USDC_IFACE } from './tx-sender';

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

/** EIP-712 types of EIP-3009 TransferWithAuthorization (USDC FiatTokenV2): the same fields as ReceiveWithAuthorization. */
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

/** EIP-712 domain with the chain id as a number. */
export interface Eip712Domain {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: string;
}

/**
 * A signed EIP-3009 authorization (Transfer- or ReceiveWithAuthorization: the same message): `value` base
 * units from `from` to `to`, usable once while validAfter < block time < validBefore (unix seconds,
 * exclusive bounds as in EIP-3009); `nonce` a bytes32; `signature` the 65-byte serialized signature.
 */
export interface Eip3009Authorization {
  from: string;
  to: string;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: string;
  signature: string;
}

/** The message of an EIP-3009 use call, as {@link decodeAuthorizationCall} reads it from calldata. */
export interface Eip3009Call extends Omit<Eip3009Authorization, 'signature'> {
  /** Which EIP-3009 use the calldata is. */
  method: 'transferWithAuthorization' | 'receiveWithAuthorization';
}

/**
 * The authorization in calldata of USDC `transferWithAuthorization` or `receiveWithAuthorization` (the
 * v, r, s form that {@link UsdcGateway.encodeTransferWithAuthorization} and the escrow's funding encode;
 * ABI of the token's artifact). `from`/`to` checksummed, `nonce` lowercase hex.
 * @returns null for calldata that is neither (another call, undecodable bytes).
 */
export function decodeAuthorizationCall(data: string): Eip3009Call | null {
  let call;
  try {
    call = USDC_IFACE.parseTransaction({ data });
  } catch {
    return null;
  }
  if (!call || (call.name !== 'transferWithAuthorization' && call.name !== 'receiveWithAuthorization')) return null;
  const [from, to, value, validAfter, validBefore, nonce] = call.args as unknown as [string, string, bigint, bigint, bigint, string];
  return { method: call.name, from, to, value, validAfter, validBefore, nonce: nonce.toLowerCase() };
}

/** A signed EIP-3009 TransferWithAuthorization (agent payments, withdrawals, refunds). */
export type TransferAuthorization = Eip3009Authorization;

/** A USDC AuthorizationUsed log: `authorizer`'s `nonce` was consumed by transaction `txHash`. */
export interface AuthorizationUsedLog {
  authorizer: string;
  nonce: string;
  txHash: string;
  blockNumber: number;
  logIndex: number;
}

/** The deployed USDC token. */
export interface UsdcGatewayConfig {
  address: string;
  /** USDC's EIP-712 name and version (a chain profile, DESIGN §18); absent = read from the token's name() and version(). */
  domain?: { name: string; version: string };
}

/**
 * Typed access to USDC over ethers v6 (docs/architecture.md §7, §13): EIP-3009 authorizations
 * (sign, encode, state, logs), balances, the `Transfer` logs of a transaction, and a plain transfer.
 * Amounts are base units (bigint). Sends go through `sender` (share one per process).
 */
export class UsdcGateway {
  readonly address: string;
  private readonly token: Contract;
  private domainCache?: Promise<Eip712Domain>;

  /** Throws TypeError on an invalid address. */
  constructor(
    readonly provider: Provider,
    private readonly config: UsdcGatewayConfig,
    readonly sender: TxSender = new TxSender(provider),
  ) {
    this.address = getAddress(config.address);
    this.token = new Contract(this.address, USDC_IFACE, provider);
  }

  /** USDC's EIP-712 domain (name and version configured, or read from the token once). */
  eip712Domain(): Promise<Eip712Domain> {
    this.domainCache ??= (async () => {
      const configured = this.config.domain;
      if (configured) {
        const network = await this.provider.getNetwork();
        return { ...configured, chainId: Number(network.chainId), verifyingContract: this.address };
      }
      const [name, version, network] = await Promise.all([
        this.token.getFunction('name').staticCall() as Promise<string>,
        this.token.getFunction('version').staticCall() as Promise<string>,
        this.provider.getNetwork(),
      ]);
      return { name, version, chainId: Number(network.chainId), verifyingContract: this.address };
    })();
    this.domainCache.catch(() => (this.domainCache = undefined));
    return this.domainCache;
  }

  /**
   * `from` signs an EIP-3009 TransferWithAuthorization of `value` base units to `to` (agent payments,
   * withdrawals; docs/architecture.md §13). `nonce` defaults to 32 random bytes.
   */
  async signTransferAuthorization(
    from: Signer,
    message: { to: string; value: bigint; validAfter?: bigint; validBefore: bigint; nonce?: string },
  ): Promise<TransferAuthorization> {
    const domain = await this.eip712Domain();
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
    const domain = await this.eip712Domain();
    const address = getAddress(await authorizer.getAddress());
    const { v, r, s } = Signature.from(await authorizer.signTypedData(domain, CANCEL_AUTHORIZATION_TYPES, { authorizer: address, nonce }));
    return USDC_IFACE.encodeFunctionData('cancelAuthorization', [address, nonce, v, r, s]);
  }

  /** USDC authorizationState: true once `nonce` of `authorizer` was used or cancelled. */
  async authorizationState(authorizer: string, nonce: string, blockTag?: number | 'latest'): Promise<boolean> {
    return (await this.token.getFunction('authorizationState').staticCall(authorizer, nonce, { blockTag })) as boolean;
  }

  /**
   * USDC AuthorizationUsed and AuthorizationCanceled logs (EIP-3009) in blocks [fromBlock, toBlock], in
   * chain order; only those of `authorizer` when given (the indexed topic, so the node filters).
   */
  async getAuthorizationLogs(fromBlock: number, toBlock: number, authorizer?: string): Promise<Array<AuthorizationUsedLog & { kind: 'used' | 'canceled' }>> {
    const used = USDC_IFACE.getEvent('AuthorizationUsed')!.topicHash;
    const canceled = USDC_IFACE.getEvent('AuthorizationCanceled')!.topicHash;
    const topics = authorizer ? [[used, canceled], zeroPadValue(getAddress(authorizer), 32)] : [[used, canceled]];
    const logs = await this.provider.getLogs({ address: this.address, fromBlock, toBlock, topics });
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
   * Only logs emitted by this token are listed; `from`/`to` checksummed, `value` base units.
   */
  async getTransfers(txHash: string): Promise<{
    status: number;
    blockNumber: number;
    blockHash: string;
    transfers: Array<{ logIndex: number; from: string; to: string; value: bigint }>;
  } | null> {
    const receipt = await this.provider.getTransactionReceipt(txHash);
    if (!receipt) return null;
    const topic = USDC_IFACE.getEvent('Transfer')!.topicHash;
    const transfers = receipt.logs
      .filter((l) => l.address.toLowerCase() === this.address.toLowerCase() && l.topics[0] === topic)
      .map((l) => {
        const parsed = USDC_IFACE.parseLog({ topics: [...l.topics], data: l.data })!;
        return { logIndex: l.index, from: getAddress(parsed.args.from as string), to: getAddress(parsed.args.to as string), value: parsed.args.value as bigint };
      });
    return { status: receipt.status ?? 0, blockNumber: receipt.blockNumber, blockHash: receipt.blockHash, transfers };
  }

  /** USDC balance of `address` in base units, at `blockTag` (a block number) or the latest block. */
  async balanceOf(address: string, blockTag?: number): Promise<bigint> {
    return (await this.token.getFunction('balanceOf').staticCall(address, blockTag === undefined ? {} : { blockTag })) as bigint;
  }

  /** Calldata of a plain USDC transfer (local-chain top-ups). */
  encodeTransfer(to: string, amount: bigint): string {
    return USDC_IFACE.encodeFunctionData('transfer', [getAddress(to), amount]);
  }

  /** `from` sends a plain USDC transfer and waits for it; returns the tx hash (agent top-ups). @throws ChainTxError. */
  transfer(from: BaseWallet, to: string, amount: bigint): Promise<string> {
    return this.sender.send(from, this.address, this.encodeTransfer(to, amount), 'transfer');
  }
}
