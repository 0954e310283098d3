import type { ClusterLock } from '../../database/cluster-lock';
import { EscrowIndexer } from './escrow-indexer.service';

/**
 * The escrow indexer's passes take the process's one injected ClusterLock (issue 31: no lock helper
 * of its own). A fake lock that another holder has: every pass is skipped without touching anything
 * else (the other collaborators throw when used). Before the change the indexer built its own lock on
 * DATABASE_URL (here a closed port), so the passes failed to connect instead.
 */
describe('EscrowIndexer and the injected ClusterLock', () => {
  it('runs each pass under the injected lock, named chain:<job>, and skips when it is held elsewhere', async () => {
    const names: string[] = [];
    const lock = { run: async (name: string) => (names.push(name), { ran: false as const }) } as unknown as ClusterLock;
    const untouched = new Proxy({}, { get: (_t, p) => (p === 'then' ? undefined : () => { throw new Error(`unexpected use of ${String(p)}`); }) });
    const config = { env: { DATABASE_URL: 'postgres://127.0.0.1:1/none', ESCROW_DEPLOY_BLOCK: 1, CONFIRMATIONS: 1 } };
    const cursors = { read: async () => 41 };
    const indexer = new EscrowIndexer(
      untouched as never, untouched as never, untouched as never, untouched as never, config as never,
      untouched as never, untouched as never, cursors as never, untouched as never, lock,
    );
    expect(await indexer.autoReleaseDue()).toEqual([]);
    expect(await indexer.expireCheckouts()).toBe(0);
    expect(await indexer.pollOnce()).toMatchObject({ skipped: true, toBlock: 41 });
    expect(names).toEqual(['chain:auto-release', 'chain:expire-checkouts', 'chain:index']);
  });
});
