import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../../database/transaction';
import { ApiKey, OAuthClient, OAuthToken, Organization } from './orgs.entity';

/** All I/O of organisations and their credentials (docs/architecture.md, Conventions 4). */
@Injectable()
export class OrgsRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /**
   * Inserts the organisation and, in the same statement, its payout address as its first owner
   * (docs/architecture.md §19).
   */
  async insertOrganization(org: Organization): Promise<void> {
    await this.em.query(
      `WITH o AS (INSERT INTO organizations (id, name, handle, payout_address) VALUES ($1, $2, $3, $4) RETURNING id, payout_address)
       INSERT INTO organization_owners (organization_id, address) SELECT id, payout_address FROM o WHERE payout_address IS NOT NULL`,
      [org.id, org.name, org.handle, org.payoutAddress],
    );
  }
  /** Organisations `address` owns (case-insensitive), oldest first. */
  async findOwnedOrganizations(address: string): Promise<Array<{ id: string; name: string; handle: string; payoutAddress: string | null }>> {
    const rows: Array<{ id: string; name: string; handle: string; payout_address: string | null }> = await this.em.query(
      `SELECT o.id, o.name, o.handle, o.payout_address FROM organization_owners w JOIN organizations o ON o.id = w.organization_id
        WHERE lower(w.address) = lower($1) ORDER BY o.created_at, o.id`,
      [address],
    );
    return rows.map((r) => ({ id: r.id, name: r.name, handle: r.handle, payoutAddress: r.payout_address }));
  }
  /** The names of the organisations `ids`, by id (absent ids are left out). */
  async organizationNames(ids: string[]): Promise<Map<string, string>> {
    if (!ids.length) return new Map();
    const rows: Array<{ id: string; name: string }> = await this.em.query(`SELECT id, name FROM organizations WHERE id = ANY($1::uuid[])`, [[...new Set(ids)]]);
    return new Map(rows.map((r) => [r.id, r.name]));
  }
  /** Whether `address` owns organisation `organizationId` (case-insensitive address). */
  async isOwner(organizationId: string, address: string): Promise<boolean> {
    const rows: unknown[] = await this.em.query(`SELECT 1 FROM organization_owners WHERE organization_id = $1 AND lower(address) = lower($2)`, [organizationId, address]);
    return rows.length > 0;
  }
  /** The owners of an organisation, oldest first. */
  async findOwners(organizationId: string): Promise<Array<{ address: string; createdAt: Date }>> {
    const rows: Array<{ address: string; created_at: Date }> = await this.em.query(
      `SELECT address, created_at FROM organization_owners WHERE organization_id = $1 ORDER BY created_at, address`,
      [organizationId],
    );
    return rows.map((r) => ({ address: r.address, createdAt: r.created_at }));
  }
  /** Adds an owner (no-op when already one). */
  async insertOwner(organizationId: string, address: string): Promise<void> {
    await this.em.query(
      `INSERT INTO organization_owners (organization_id, address) SELECT $1, $2
        WHERE NOT EXISTS (SELECT 1 FROM organization_owners WHERE organization_id = $1 AND lower(address) = lower($2))`,
      [organizationId, address],
    );
  }
  /**
   * Removes an owner unless it is the last one; the owners are locked first, so two concurrent
   * removals cannot leave none.
   * @returns 'removed', 'last' (refused) or 'absent'.
   */
  async deleteOwner(organizationId: string, address: string): Promise<'removed' | 'last' | 'absent'> {
    const owners: Array<{ address: string }> = await this.em.query(`SELECT address FROM organization_owners WHERE organization_id = $1 FOR UPDATE`, [organizationId]);
    const hit = owners.find((o) => o.address.toLowerCase() === address.toLowerCase());
    if (!hit) return 'absent';
    if (owners.length === 1) return 'last';
    await this.em.query(`DELETE FROM organization_owners WHERE organization_id = $1 AND address = $2`, [organizationId, hit.address]);
    return 'removed';
  }
  /** Takes the transaction-scoped advisory lock of an owner address (serialises self-serve creation per address). */
  async lockOwnerAddress(address: string): Promise<void> {
    await this.em.query(`SELECT pg_advisory_xact_lock(hashtext('console-owner:' || lower($1)))`, [address]);
  }
  /** API keys of an organisation, newest first (secrets never leave; the prefix identifies them). */
  async findApiKeys(organizationId: string): Promise<ApiKey[]> {
    return this.em.getRepository(ApiKey).find({ where: { organizationId }, order: { createdAt: 'DESC' } });
  }
  findApiKey(id: string) {
    return this.em.getRepository(ApiKey).findOneBy({ id });
  }
  findOrganization(id: string) {
    return this.em.getRepository(Organization).findOneBy({ id });
  }
  findOrganizationByHandle(handle: string) {
    return this.em.getRepository(Organization).findOneBy({ handle });
  }
  findOrganizationByPayoutAddress(address: string) {
    return this.em
      .getRepository(Organization)
      .createQueryBuilder('o')
      .where('lower(o.payout_address) = lower(:address)', { address })
      .andWhere('o.payout_address_proven')
      .orderBy('o.created_at', 'ASC')
      .getOne();
  }
  insertApiKey(key: ApiKey) {
    return this.em.getRepository(ApiKey).insert(key);
  }
  /** Hot path of every request: one indexed lookup by digest, raw SQL (TypeORM's find costs ~2.5× the query). */
  async findApiKeyByHash(secretHash: Buffer): Promise<ApiKey | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(
      'SELECT id, organization_id, agent_id, kind, secret_hash, scopes, revoked_at FROM api_keys WHERE secret_hash = $1',
      [secretHash],
    );
    if (!rows.length) return null;
    const r = rows[0];
    return Object.assign(new ApiKey(), {
      id: r.id,
      organizationId: r.organization_id,
      agentId: r.agent_id,
      kind: r.kind,
      secretHash: r.secret_hash,
      scopes: r.scopes,
      revokedAt: r.revoked_at,
    });
  }
  /**
   * Stamps a key's `last_used_at` with the database's clock, unless it was stamped within the last
   * minute (so two processes racing write once). One indexed UPDATE by primary key.
   */
  async touchApiKey(id: string): Promise<void> {
    await this.em.query(
      `UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
      [id],
    );
  }
  insertOAuthClient(client: OAuthClient) {
    return this.em.getRepository(OAuthClient).insert(client);
  }
  /** An organisation's OAuth clients, newest first. */
  findOAuthClients(organizationId: string): Promise<OAuthClient[]> {
    return this.em.getRepository(OAuthClient).find({ where: { organizationId }, order: { createdAt: 'DESC' } });
  }
  findOAuthClient(clientId: string) {
    return this.em.getRepository(OAuthClient).findOneBy({ clientId });
  }
  insertOAuthToken(token: OAuthToken) {
    return this.em.getRepository(OAuthToken).insert(token);
  }
  /**
   * A token by digest with its client's revocation time (`clientRevokedAt`), read in the same
   * statement so revoking a client stops its tokens at once.
   */
  async findOAuthTokenByHash(tokenHash: Buffer): Promise<(OAuthToken & { clientRevokedAt: Date | null }) | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(
      `SELECT t.id, t.oauth_client_id, t.organization_id, t.token_hash, t.scopes, t.expires_at, c.revoked_at AS client_revoked_at
         FROM oauth_tokens t JOIN oauth_clients c ON c.id = t.oauth_client_id
        WHERE t.token_hash = $1`,
      [tokenHash],
    );
    if (!rows.length) return null;
    const r = rows[0];
    return Object.assign(new OAuthToken(), {
      id: r.id as string,
      oauthClientId: r.oauth_client_id as string,
      organizationId: r.organization_id as string,
      tokenHash: r.token_hash as Buffer,
      scopes: r.scopes as string[],
      expiresAt: r.expires_at as Date,
      clientRevokedAt: (r.client_revoked_at as Date | null) ?? null,
    });
  }
  /** Sets `revoked_at` once (an earlier revocation time is kept). @returns the key's id and revocation time, or null when unknown. */
  async revokeApiKey(id: string): Promise<{ id: string; revokedAt: Date } | null> {
    const rows: Array<{ id: string; revoked_at: Date }> = await this.em.query(
      // A SELECT over the UPDATE: TypeORM returns [rows, count] for a bare UPDATE … RETURNING.
      'WITH u AS (UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING id, revoked_at) SELECT * FROM u',
      [id],
    );
    return rows.length ? { id: rows[0].id, revokedAt: rows[0].revoked_at } : null;
  }
  /** As {@link revokeApiKey}, for an OAuth client by its public `client_id` (bac_…). */
  async revokeOAuthClient(clientId: string): Promise<{ id: string; clientId: string; revokedAt: Date } | null> {
    const rows: Array<{ id: string; client_id: string; revoked_at: Date }> = await this.em.query(
      'WITH u AS (UPDATE oauth_clients SET revoked_at = coalesce(revoked_at, now()) WHERE client_id = $1 RETURNING id, client_id, revoked_at) SELECT * FROM u',
      [clientId],
    );
    return rows.length ? { id: rows[0].id, clientId: rows[0].client_id, revokedAt: rows[0].revoked_at } : null;
  }
}
