import { Injectable } from '@nestjs/common';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { keysetPage } from '../../common/http/keyset';
import { TransactionHost, TxHost } from '../../database/transaction';
import { CheckoutSession } from './checkout.entity';

/** All I/O of checkout sessions (STYLE §4). */
@Injectable()
export class CheckoutRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get repo() {
    return (this.txHost as TxHost).tx.getRepository(CheckoutSession);
  }

  async insert(session: CheckoutSession): Promise<CheckoutSession> {
    await this.repo.insert(session as QueryDeepPartialEntity<CheckoutSession>);
    return session;
  }

  /** A session of this organisation, or null (another organisation's id is treated as absent). */
  findForOrganization(organizationId: string, id: string): Promise<CheckoutSession | null> {
    return this.repo.findOneBy({ id, organizationId });
  }

  findById(id: string): Promise<CheckoutSession | null> {
    return this.repo.findOneBy({ id });
  }

  /** Newest first; `limit + 1` rows. */
  list(organizationId: string, limit: number, startingAfter?: string): Promise<CheckoutSession[]> {
    return keysetPage(this.repo.createQueryBuilder('c'), 'c', organizationId, limit, startingAfter);
  }
}
