import { Injectable } from '@nestjs/common';
import { keysetPage } from '../../common/http/keyset';
import { TransactionHost, TxHost } from '../../database/transaction';
import { Offering } from './offerings.entity';

/** All I/O of offerings (docs/architecture.md, Conventions 4); every call runs in the caller's transaction when there is one. */
@Injectable()
export class OfferingsRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get repo() {
    return (this.txHost as TxHost).tx.getRepository(Offering);
  }

  async insert(o: Offering): Promise<Offering> {
    await this.repo.insert(o as never);
    return (await this.repo.findOneBy({ id: o.id }))!;
  }

  /** The offering of this organisation, or null; `forUpdate` locks the row until the transaction ends. */
  findForOrganization(organizationId: string, id: string, forUpdate = false): Promise<Offering | null> {
    const qb = this.repo.createQueryBuilder('o').where('o.id = :id AND o.organization_id = :org', { id, org: organizationId });
    if (forUpdate) qb.setLock('pessimistic_write');
    return qb.getOne();
  }

  async save(o: Offering): Promise<Offering> {
    await this.repo.update(
      { id: o.id },
      { name: o.name, description: o.description, amountUnits: o.amountUnits, escrowTemplateId: o.escrowTemplateId, active: o.active, metadata: o.metadata as never, updatedAt: new Date() },
    );
    return (await this.repo.findOneBy({ id: o.id }))!;
  }

  /** Newest first; `limit + 1` rows; `active` filters when given. */
  list(organizationId: string, limit: number, startingAfter?: string, active?: boolean): Promise<Offering[]> {
    return keysetPage(
      () => this.repo.createQueryBuilder('o'),
      'o',
      { sql: 'o.organization_id = :org', params: { org: organizationId } },
      limit,
      startingAfter,
      (qb) => {
        if (active !== undefined) qb.andWhere('o.active = :active', { active });
      },
    );
  }
}
