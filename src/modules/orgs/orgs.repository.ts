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
  findApiKeyByHash(secretHash: Buffer) {
    return this.em.getRepository(ApiKey).findOneBy({ secretHash });
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
  findOAuthTokenByHash(tokenHash: Buffer) {
    return this.em.getRepository(OAuthToken).findOneBy({ tokenHash });
  }
}
