import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * USDC `AuthorizationCanceled` logs as reconciliation read them (issue 30 "Reconciliation on a long
 * chain"): read in bounded windows (RECONCILE_LOG_WINDOW blocks) from the cursor `reconcile-cancels`
 * in `chain_cursors`, so a pass never asks a node for the whole chain in one eth_getLogs. A failed
 * payment or x402 settlement whose authorization is used on chain is fine when its (authorizer,
 * nonce) is here. Authorizer and nonce are lower case.
 */
export class ReconcileCancellations1795300081100 implements MigrationInterface {
  name = 'ReconcileCancellations1795300081100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE reconcile_cancellations (
      authorizer text NOT NULL,
      nonce text NOT NULL,
      block_number bigint NOT NULL,
      tx_hash text NOT NULL,
      PRIMARY KEY (authorizer, nonce)
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE reconcile_cancellations`);
  }
}
