import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintTransformer } from '../../database/bigint.transformer';

/**
 * One gasless funding relay of the pay page (table checkout_relays, migration CheckoutRelays;
 * docs/architecture.md §16, §18): the buyer's EIP-3009 authorization, keyed by (buyer, nonce),
 * both lower case; validity in unix seconds (numeric(78,0)); `relayTxId` the relayer row carrying it.
 */
@Entity('checkout_relays')
export class CheckoutRelay {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'checkout_session_id' }) checkoutSessionId: string;
  @Column('text') buyer: string;
  @Column('text') nonce: string;
  @Column('numeric', { name: 'valid_after', precision: 78, scale: 0, transformer: bigintTransformer }) validAfter: bigint;
  @Column('numeric', { name: 'valid_before', precision: 78, scale: 0, transformer: bigintTransformer }) validBefore: bigint;
  @Column('text') signature: string;
  @Column('text') status: 'reserved' | 'broadcast' | 'failed';
  @Column('uuid', { name: 'relay_tx_id', nullable: true }) relayTxId: string | null;
  @Column('text', { name: 'tx_hash', nullable: true }) txHash: string | null;
  @Column('text', { nullable: true }) error: string | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt: Date;
}
