import { Injectable } from '@nestjs/common';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { TransactionHost, TxHost } from '../../database/transaction';
import { OrganizationVerification, VerificationWalletPayment } from './verification.entity';
import type { IdentityProviderName } from './verification.state';

/** All I/O of verification records and accepted wallet payments (docs/architecture.md, Conventions 4). */
@Injectable()
export class VerificationRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  find(organizationId: string): Promise<OrganizationVerification | null> {
    return this.em.getRepository(OrganizationVerification).findOneBy({ organizationId });
  }

  /** Only the identity status (the kyb_rejected gate's one indexed read). */
  async identityStatus(organizationId: string): Promise<string | null> {
    const rows: Array<{ identity_status: string }> = await this.em.query(
      'SELECT identity_status FROM organization_verifications WHERE organization_id = $1',
      [organizationId],
    );
    return rows[0]?.identity_status ?? null;
  }

  /**
   * The organisation's record under a row lock, created (unverified) when absent; concurrent
   * callers for one organisation queue here. Call inside a transaction.
   */
  async lockOrCreate(organizationId: string): Promise<OrganizationVerification> {
    await this.em.query('INSERT INTO organization_verifications (organization_id) VALUES ($1) ON CONFLICT DO NOTHING', [organizationId]);
    return this.em.getRepository(OrganizationVerification).findOneOrFail({ where: { organizationId }, lock: { mode: 'pessimistic_write' } });
  }

  /** The record whose current identity session is `reference` at `provider`, locked; null when none. */
  findBySessionForUpdate(provider: IdentityProviderName, reference: string): Promise<OrganizationVerification | null> {
    return this.em.getRepository(OrganizationVerification).findOne({
      where: { identityProvider: provider, identityReference: reference },
      lock: { mode: 'pessimistic_write' },
    });
  }

  /** The record whose current session is `reference` (sandbox page), unlocked. */
  findBySession(provider: IdentityProviderName, reference: string): Promise<OrganizationVerification | null> {
    return this.em.getRepository(OrganizationVerification).findOneBy({ identityProvider: provider, identityReference: reference });
  }

  async save(record: OrganizationVerification): Promise<OrganizationVerification> {
    const { organizationId, createdAt: _c, updatedAt: _u, ...fields } = record;
    await this.em.getRepository(OrganizationVerification).update({ organizationId }, { ...fields, updatedAt: new Date() } as QueryDeepPartialEntity<OrganizationVerification>);
    return this.em.getRepository(OrganizationVerification).findOneByOrFail({ organizationId });
  }

  /**
   * Records an accepted wallet payment unless its (txHash, logIndex) is taken.
   * @returns null when inserted, else the organisation that holds it.
   */
  async claimPayment(payment: VerificationWalletPayment): Promise<string | null> {
    const result = await this.em
      .createQueryBuilder()
      .insert()
      .into(VerificationWalletPayment)
      .values(payment as QueryDeepPartialEntity<VerificationWalletPayment>)
      .orIgnore()
      .execute();
    if ((result.raw as unknown[]).length > 0) return null;
    const holder = await this.em.getRepository(VerificationWalletPayment).findOneBy({ txHash: payment.txHash, logIndex: payment.logIndex });
    return holder?.organizationId ?? '';
  }
}
