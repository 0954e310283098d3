import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../../database/transaction';
import { Agent, ApiKey, OAuthClient, OAuthToken, Organization } from './orgs.entity';

/** All I/O of organisations and their credentials (STYLE §4). */
@Injectable()
export class OrgsRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  insertOrganization(org: Organization) {
    return this.em.getRepository(Organization).insert(org);
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
      .orderBy('o.created_at', 'ASC')
      .getOne();
  }
  insertAgent(agent: Agent) {
    return this.em.getRepository(Agent).insert(agent);
  }
  findAgent(id: string) {
    return this.em.getRepository(Agent).findOneBy({ id });
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
  insertOAuthClient(client: OAuthClient) {
    return this.em.getRepository(OAuthClient).insert(client);
  }
  findOAuthClient(clientId: string) {
    return this.em.getRepository(OAuthClient).findOneBy({ clientId });
  }
  insertOAuthToken(token: OAuthToken) {
    return this.em.getRepository(OAuthToken).insert(token);
  }
  async findOAuthTokenByHash(tokenHash: Buffer): Promise<OAuthToken | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(
      'SELECT id, oauth_client_id, organization_id, token_hash, scopes, expires_at FROM oauth_tokens WHERE token_hash = $1',
      [tokenHash],
    );
    if (!rows.length) return null;
    const r = rows[0];
    return Object.assign(new OAuthToken(), {
      id: r.id,
      oauthClientId: r.oauth_client_id,
      organizationId: r.organization_id,
      tokenHash: r.token_hash,
      scopes: r.scopes,
      expiresAt: r.expires_at,
    });
  }
}
