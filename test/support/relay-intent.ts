import type { TestApp } from './app';
import type { TestChain } from './chain';

/**
 * What the one-live-relay-per-intent proofs (issue 29 finding 1, DESIGN §22) look at: the relayer rows
 * of an intent, and the relayer's transactions waiting in anvil's pool while mining is stopped.
 */
export interface RelayIntentProbe {
  /** Mining on (anvil automine) or off: off, every relay stays unmined until {@link TestChain.mine}. */
  automine(on: boolean): Promise<unknown>;
  /** The relayer rows of the intent (`purpose`, `reference`), every status. */
  rows(purpose: string, reference: string): Promise<Array<{ id: string; status: string; tx_hash: string | null }>>;
  /** Transactions the relayer has in the pool (sent, not mined). */
  pooled(): Promise<number>;
  /**
   * Transactions in the pool, from any sender (this file's relayer or another's on the shared anvil),
   * whose calldata holds `needle` (hex, e.g. an authorization nonce or an escrow key): one intent's
   * transactions, whatever else the run's relays put there.
   */
  pooledWith(needle: string): Promise<number>;
}

/** A {@link RelayIntentProbe} over the suite's app and chain (read lazily: both are set in `beforeAll`). */
export function relayIntentProbe(app: () => TestApp, chain: () => TestChain): RelayIntentProbe {
  return {
    automine: (on) => chain().provider.send('evm_setAutomine', [on]),
    rows: (purpose, reference) => app().dataSource.query(`SELECT id, status, tx_hash FROM relayer_transactions WHERE purpose = $1 AND reference = $2 ORDER BY created_at`, [purpose, reference]),
    pooled: async () => {
      const { provider, relayer } = chain();
      return (await provider.getTransactionCount(relayer.address, 'pending')) - (await provider.getTransactionCount(relayer.address, 'latest'));
    },
    pooledWith: async (needle) => {
      const content = (await chain().provider.send('txpool_content', [])) as { pending?: Record<string, Record<string, { input: string }>> };
      const hex = needle.toLowerCase().replace(/^0x/, '');
      return Object.values(content.pending ?? {})
        .flatMap((bySender) => Object.values(bySender))
        .filter((tx) => tx.input.toLowerCase().includes(hex)).length;
    },
  };
}
