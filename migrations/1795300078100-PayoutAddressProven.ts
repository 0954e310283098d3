import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whether an organisation's payout address is proven (issue 28 item 4): set by the operator CLI
 * (trusted) or in the console (the signed-in address, or one that signed PayoutAddress). Existing
 * organisations keep their address; one created in the console with another address as payout
 * (an owner other than the payout address added in the creating transaction) is marked unproven,
 * and escrows are never attributed to it by that address (docs/decisions.md "Payout address proof").
 */
export class PayoutAddressProven1795300078100 implements MigrationInterface {
  name = 'PayoutAddressProven1795300078100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE organizations ADD COLUMN payout_address_proven boolean NOT NULL DEFAULT true`);
    await q.query(`UPDATE organizations o SET payout_address_proven = false
      WHERE o.payout_address IS NOT NULL AND EXISTS (
        SELECT 1 FROM organization_owners w
        WHERE w.organization_id = o.id AND lower(w.address) <> lower(o.payout_address) AND w.created_at = o.created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE organizations DROP COLUMN payout_address_proven`);
  }
}
