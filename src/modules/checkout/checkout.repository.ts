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

  async updateEscrowState(id: string, escrowId: string | null, status: CheckoutSession['status']): Promise<void> {
    await this.repo.update({ id }, { escrowId, status, updatedAt: new Date() });
  }

  /** Marks open sessions past expiresAt as expired; returns how many. */
  async expireDue(now: Date): Promise<number> {
    const result = await this.repo
      .createQueryBuilder()
      .update(CheckoutSession)
      .set({ status: 'expired', updatedAt: now })
      .where("status = 'open' AND expires_at <= :now", { now })
      .execute();
    return result.affected ?? 0;
  }

  /** Newest first; `limit + 1` rows. */
  list(organizationId: string, limit: number, startingAfter?: string): Promise<CheckoutSession[]> {
    return keysetPage(this.repo.createQueryBuilder('c'), 'c', organizationId, limit, startingAfter);
  }
}
