import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';

/**
 * The request-scoped transaction shared by repositories, the idempotency interceptor and the
 * outbox writer (docs/architecture.md §2): `txHost.tx` is the current transaction's EntityManager, or the
 * default manager outside one; `txHost.withTransaction(fn)` joins or opens one.
 */
export type TxHost = TransactionHost<TransactionalAdapterTypeOrm>;
export { TransactionHost, Propagation } from '@nestjs-cls/transactional';
