import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Console1795300076000 } from '../../migrations/1795300076000-Console';
import { IsolatedEnv, isolatedWebhookEnv } from '../support/webhook-env';

jest.setTimeout(60_000);

/**
 * Migration 1795300076000 (docs/architecture.md §19) backfills `organization_owners` from every
 * existing organisation's payout address, on its own database (it is rolled back and re-applied).
 */
describe('console migration backfills organisation owners', () => {
  let iso: IsolatedEnv;
  let ds: DataSource;

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('consolemig');
    ds = await new DataSource({ type: 'postgres', url: iso.env.DATABASE_URL }).initialize();
  });
  afterAll(async () => {
    await ds?.destroy();
    await iso?.drop();
  });

  it('each organisation with a payout address gets it as its owner; one without gets none', async () => {
    const migration = new Console1795300076000();
    const runner = ds.createQueryRunner();
    try {
      await migration.down(runner);
      const withPayout = randomUUID();
      const without = randomUUID();
      const payout = '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc';
      await runner.query(`INSERT INTO organizations (id, name, handle, payout_address) VALUES ($1, 'A', $2, $3), ($4, 'B', $5, NULL)`, [
        withPayout,
        `a-${withPayout.slice(0, 8)}`,
        payout,
        without,
        `b-${without.slice(0, 8)}`,
      ]);
      await migration.up(runner);
      const owners: Array<{ organization_id: string; address: string }> = await runner.query(`SELECT organization_id, address FROM organization_owners`);
      expect(owners).toEqual([{ organization_id: withPayout, address: payout }]);
    } finally {
      await runner.release();
    }
  });
});
