import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An API key's "last used" (issue 20, console keys page): `last_used_at`, stamped at most once a
 * minute per key (docs/decisions.md "API key last used"); null for a key never used.
 */
export class ApiKeyLastUsed1795300077000 implements MigrationInterface {
  name = 'ApiKeyLastUsed1795300077000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys DROP COLUMN last_used_at`);
  }
}
