import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Who created an API key (issue 28, DESIGN §19 "Whose float it is"): `console:<address>` or
 * `operator`; null for keys created before this column (they stay valid, docs/decisions.md
 * "Agent owner consent").
 */
export class ApiKeyCreatedBy1795300078000 implements MigrationInterface {
  name = 'ApiKeyCreatedBy1795300078000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys ADD COLUMN created_by text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys DROP COLUMN created_by`);
  }
}
