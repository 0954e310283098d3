import { getAddress, getTypesForEIP712Domain, numberToHex, serializeTypedData, validateTypedData, type EIP1193Provider, type TypedDataDefinition } from 'viem';

/** EIP-6963 provider info and the provider it announces. */
export interface ProviderDetail {
  info: { uuid: string; name: string; icon?: string; rdns?: string };
  provider: EIP1193Provider;
}

/**
 * Discovers injected wallets by EIP-6963: listens for `eip6963:announceProvider`, dispatches
 * `eip6963:requestProvider`, and after `waitMs` returns every distinct announcement (by uuid);
 * falls back to the legacy `window.ethereum` (EIP-1193) when nothing announced itself.
 */
export async function discoverWallets(waitMs = 300): Promise<ProviderDetail[]> {
  const found = new Map<string, ProviderDetail>();
  const onAnnounce = (e: Event) => {
    const detail = (e as CustomEvent<ProviderDetail>).detail;
    if (detail?.info?.uuid && detail.provider && typeof detail.provider.request === 'function') found.set(detail.info.uuid, detail);
  };
  window.addEventListener('eip6963:announceProvider', onAnnounce);
  window.dispatchEvent(new Event('eip6963:requestProvider'));
  await new Promise((r) => setTimeout(r, waitMs));
  window.removeEventListener('eip6963:announceProvider', onAnnounce);
  if (found.size === 0) {
    const legacy = (window as unknown as { ethereum?: EIP1193Provider }).ethereum;
    if (legacy) found.set('legacy', { info: { uuid: 'legacy', name: 'Browser wallet' }, provider: legacy });
  }
  return [...found.values()];
}

/** Why a wallet step failed, in words a buyer understands (see {@link explainWalletError}). */
export class WalletError extends Error {
  constructor(
    readonly kind: 'rejected' | 'wrong_network' | 'no_wallet' | 'no_account' | 'other',
    message: string,
  ) {
    super(message);
  }
}

/** The EIP-1193 error code somewhere in `err`'s cause chain (viem wraps provider errors). */
export function rpcCode(err: unknown): number | undefined {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 8; e = e.cause as typeof e, i++) {
    if (typeof e.code === 'number') return e.code;
  }
  return undefined;
}

const CHAIN_NAMES: Record<number, string> = { 1: 'Ethereum', 8453: 'Base', 84532: 'Base Sepolia', 11155111: 'Sepolia', 31337: 'the local development chain' };

/** A chain's name for messages ("Base (chain 8453)"). */
export const chainName = (id: number): string => `${CHAIN_NAMES[id] ?? 'network'} (chain ${id})`;

/**
 * A connected wallet: its EIP-1193 provider, the account the user granted (`eth_requestAccounts`),
 * and the chain the page needs.
 */
export class Wallet {
  private constructor(
    readonly provider: EIP1193Provider,
    readonly name: string,
    public account: `0x${string}`,
    readonly chainId: number,
  ) {}

  /**
   * Asks the wallet for an account (EIP-1193 `eth_requestAccounts`).
   * @throws WalletError rejected (code 4001) or no_account.
   */
  static async connect(detail: ProviderDetail, chainId: number): Promise<Wallet> {
    let accounts: string[];
    try {
      accounts = (await detail.provider.request({ method: 'eth_requestAccounts' })) as string[];
    } catch (err) {
      if (rpcCode(err) === 4001) throw new WalletError('rejected', 'You declined the connection in your wallet.');
      throw new WalletError('other', `Your wallet could not connect: ${(err as Error).message}`);
    }
    if (!accounts?.length) throw new WalletError('no_account', 'Your wallet shared no account. Unlock it and try again.');
    return new Wallet(detail.provider, detail.info.name, getAddress(accounts[0]), chainId);
  }

  /** Follows `accountsChanged` / `chainChanged` from the wallet (EIP-1193 events). */
  onChange(handler: () => void): void {
    const p = this.provider as EIP1193Provider & { on?: (e: string, h: (...a: unknown[]) => void) => void };
    p.on?.('accountsChanged', (...args: unknown[]) => {
      const accounts = args[0] as string[] | undefined;
      if (accounts?.[0]) this.account = getAddress(accounts[0]);
      handler();
    });
    p.on?.('chainChanged', () => handler());
  }

  /** The wallet's current chain (`eth_chainId`). */
  async currentChain(): Promise<number> {
    return Number(await this.provider.request({ method: 'eth_chainId' }));
  }

  /**
   * Makes sure the wallet is on the page's chain: reads `eth_chainId` and, when it differs, asks
   * `wallet_switchEthereumChain` (EIP-3326) and reads again.
   * @throws WalletError wrong_network when the wallet stays elsewhere (refused, unknown chain).
   */
  async ensureChain(): Promise<void> {
    const current = await this.currentChain();
    if (current === this.chainId) return;
    try {
      await this.provider.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: numberToHex(this.chainId) }] });
    } catch {
      // fall through to the check below: refused (4001), unknown chain (4902) or unsupported
    }
    const after = await this.currentChain().catch(() => current);
    if (after !== this.chainId) {
      throw new WalletError('wrong_network', `Your wallet is on the wrong network: ${chainName(after)}. Switch it to ${chainName(this.chainId)} and try again. Nothing was paid.`);
    }
  }

  /**
   * Signs a text message with `personal_sign` (EIP-191; the console's EIP-4361 sign-in message).
   * @throws WalletError rejected (EIP-1193 4001), other.
   */
  async personalSign(message: string): Promise<`0x${string}`> {
    const hex: `0x${string}` = `0x${Array.from(new TextEncoder().encode(message), (b) => b.toString(16).padStart(2, '0')).join('')}`;
    try {
      return (await this.provider.request({ method: 'personal_sign', params: [hex, this.account] })) as `0x${string}`;
    } catch (err) {
      if (rpcCode(err) === 4001) throw new WalletError('rejected', 'You declined to sign in.');
      throw new WalletError('other', `Your wallet could not sign: ${(err as Error).message.split('\n')[0]}`);
    }
  }

  /**
   * Signs EIP-712 typed data with `eth_signTypedData_v4` (EIP-712; the JSON as viem's own
   * signTypedData sends it: EIP712Domain type added, values validated, addresses lower-cased);
   * uint/int fields given as decimal text are read as bigint first. Checks the chain first.
   * `account` (default the connected one) is the address asked to sign: a wallet that does not hold
   * it refuses (EIP-1193 4100), as the console's agent-owner consent relies on.
   * @throws WalletError rejected (EIP-1193 4001), wrong_network, other.
   */
  async signTypedData(
    typedData: { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; primaryType: string; message: Record<string, unknown> },
    account: string = this.account,
  ): Promise<`0x${string}`> {
    await this.ensureChain();
    const structs = Object.fromEntries(Object.entries(typedData.types).filter(([k]) => k !== 'EIP712Domain'));
    const domain = { ...typedData.domain } as Record<string, unknown>;
    if (domain.chainId !== undefined) domain.chainId = Number(domain.chainId);
    const definition = {
      domain,
      types: { EIP712Domain: getTypesForEIP712Domain({ domain }), ...structs },
      primaryType: typedData.primaryType,
      message: coerceInts(structs, typedData.primaryType, typedData.message),
    } as unknown as TypedDataDefinition;
    validateTypedData(definition);
    try {
      return (await this.provider.request({ method: 'eth_signTypedData_v4', params: [account as `0x${string}`, serializeTypedData(definition)] })) as `0x${string}`;
    } catch (err) {
      if (rpcCode(err) === 4001) throw new WalletError('rejected', 'You rejected the signature in your wallet. Nothing was paid or changed.');
      throw new WalletError('other', `Your wallet could not sign: ${(err as Error).message.split('\n')[0]}`);
    }
  }
}

/** Copies `message` with every uint/int field of `primaryType` (recursively for structs) as bigint. */
function coerceInts(types: Record<string, Array<{ name: string; type: string }>>, primaryType: string, message: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...message };
  for (const field of types[primaryType] ?? []) {
    const v = out[field.name];
    if (/^u?int\d*$/.test(field.type) && (typeof v === 'string' || typeof v === 'number')) out[field.name] = BigInt(v);
    else if (types[field.type] && v && typeof v === 'object') out[field.name] = coerceInts(types, field.type, v as Record<string, unknown>);
  }
  return out;
}
