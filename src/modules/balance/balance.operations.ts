import type { OperationSpec } from '../../kernel/operation';
import { BalanceExportQueryDto, BalanceTransactionListQueryDto } from './dto/balance-transaction.dto';

/**
 * `list-balance-transactions` (GET /balance-transactions, svc_balance_transaction_list; DESIGN §21):
 * a plain read (DESIGN §17: a service method with declared scopes). balance:read; no key.
 */
export const LIST_BALANCE_TRANSACTIONS: OperationSpec<BalanceTransactionListQueryDto> = {
  name: 'list-balance-transactions',
  scopes: ['balance:read'],
  input: BalanceTransactionListQueryDto,
  idempotency: 'none',
};

/** `export-balance-transactions` (GET /balance-transactions/export): the CSV statement of a window up to a year. balance:read; no key. */
export const EXPORT_BALANCE_TRANSACTIONS: OperationSpec<BalanceExportQueryDto> = {
  name: 'export-balance-transactions',
  scopes: ['balance:read'],
  input: BalanceExportQueryDto,
  idempotency: 'none',
};
