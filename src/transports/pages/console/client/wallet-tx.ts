/**
 * The connected wallet's own transactions and owner messages on the console pages: sends with a
 * bounded receipt wait, plain USDC transfers, single-use nonces and USDC amounts.
 */
import { encodeFunctionData, erc20Abi, parseUnits } from 'viem';
import { say } from '../../pay/client/ui';
import { rpcCode, type Wallet, WalletError } from '../../pay/client/wallet';

/** 32 random bytes as 0x hex: the single-use nonce of an owner message. */
export function randomNonce(): string {
  return `0x${Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** USDC decimal text ("12.50") as base units (6 decimals). @throws Error when it is not a positive amount with at most 6 decimals. */
export function usdcUnits(amount: string): bigint {
  if (!/^\d+(\.\d{1,6})?$/.test(amount)) throw new Error(`"${amount}" is not a USDC amount such as 12.50`);
  const units = parseUnits(amount, 6);
  if (units <= 0n) throw new Error('The amount must be more than zero');
  return units;
}

/**
 * Sends a transaction `{to, data}` from the connected account (EIP-1193 `eth_sendTransaction`) and
 * waits, bounded (2 min), for its receipt (`eth_getTransactionReceipt`). `what` names it in messages.
 * @returns the transaction hash once mined with status 1.
 * @throws WalletError rejected (4001); Error when it reverted or is not mined in time (it may still
 *   be: the message says so, never that nothing moved).
 */
export async function sendTransaction(wallet: Wallet, to: string, data: `0x${string}`, what: string): Promise<string> {
  await wallet.ensureChain();
  let hash: string;
  try {
    hash = (await wallet.provider.request({ method: 'eth_sendTransaction', params: [{ from: wallet.account, to: to as `0x${string}`, data }] })) as string;
  } catch (err) {
    if (rpcCode(err) === 4001) throw new WalletError('rejected', `You rejected the ${what} in your wallet. Nothing was sent.`);
    throw new WalletError('other', `Your wallet could not send: ${(err as Error).message.split('\n')[0]}`);
  }
  say(`The ${what} was sent (${hash}); waiting for it to be mined…`);
  for (const until = Date.now() + 120_000; Date.now() < until; await new Promise((r) => setTimeout(r, 1000))) {
    const receipt = (await wallet.provider.request({ method: 'eth_getTransactionReceipt', params: [hash as `0x${string}`] }).catch(() => null)) as { status?: string } | null;
    if (receipt?.status === '0x1') return hash;
    if (receipt?.status === '0x0') throw new Error(`The ${what} ${hash} reverted: nothing changed.`);
  }
  throw new Error(`The ${what} ${hash} is not mined yet; it may still be. Reload later to see it.`);
}

/** A plain USDC `transfer(to, units)` from the connected account (see {@link sendTransaction}). */
export function sendUsdcTransfer(wallet: Wallet, usdc: string, to: string, units: bigint): Promise<string> {
  return sendTransaction(wallet, usdc, encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to as `0x${string}`, units] }), 'transfer');
}

