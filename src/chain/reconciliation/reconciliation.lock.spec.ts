import type { ClusterLock } from '../../database/cluster-lock';
import { ReconciliationService } from './reconciliation.service';

/**
 * Reconciliation runs under the process's one injected ClusterLock (issue 31: no lock helper of its
 * own). A fake lock that another holder has: the pass is skipped (null) without touching the database,
 * the chain or Redis (they throw when used). Before the change the service built its own lock on
 * DATABASE_URL (here a closed port), so the pass failed to connect instead.
 */
describe('ReconciliationService and the injected ClusterLock', () => {
  it('takes the injected lock "reconcile" and skips when it is held elsewhere', async () => {
    const names: string[] = [];
    const lock = { run: async (name: string) => (names.push(name), { ran: false as const }) } as unknown as ClusterLock;
    const untouched = new Proxy({}, { get: (_t, p) => (p === 'then' ? undefined : () => { throw new Error(`unexpected use of ${String(p)}`); }) });
    const config = { env: { DATABASE_URL: 'postgres://127.0.0.1:1/none', REDIS_PREFIX: 'x' } };
    const service = new ReconciliationService(untouched as never, untouched as never, untouched as never, config as never, untouched as never, untouched as never, lock);
    expect(await service.runExclusive()).toBeNull();
    expect(names).toEqual(['reconcile']);
  });
});
