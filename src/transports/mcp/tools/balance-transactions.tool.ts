import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { BalanceTransactionListQueryDto } from '../../../modules/balance/dto/balance-transaction.dto';
import { BALANCE_TRANSACTION_TYPES } from '../../../modules/balance/balance-transaction.entity';
import { LIST_BALANCE_TRANSACTIONS } from '../../../modules/balance/balance.operations';
import { BalanceService } from '../../../modules/balance/balance.service';
import type { McpToolContext, ServiceTool } from '../mcp-tool';
import { listShape } from './ids';

/** svc_balance_transaction_list: GET /api/v1/balance-transactions (access and input from LIST_BALANCE_TRANSACTIONS, declared once). */
@Injectable()
export class BalanceTransactionListTool implements ServiceTool<BalanceTransactionListQueryDto & Record<string, unknown>> {
  readonly name = 'svc_balance_transaction_list';
  readonly title = 'List balance transactions';
  readonly description = 'The USDC movements of your organisation (escrow releases, payments and x402 settlements received, refunds), newest first; signed decimal amounts.';
  readonly scopes = LIST_BALANCE_TRANSACTIONS.scopes;
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly input = z.object({
    ...listShape,
    type: z.enum(BALANCE_TRANSACTION_TYPES as [string, ...string[]]).optional(),
    'created[gte]': z.string().optional().describe('Block time at or after (ISO-8601)'),
    'created[lt]': z.string().optional().describe('Block time before (ISO-8601)'),
  });
  readonly dto = LIST_BALANCE_TRANSACTIONS.input;
  constructor(private readonly balance: BalanceService) {}
  run(ctx: McpToolContext, q: BalanceTransactionListQueryDto) {
    return this.balance.list(ctx.principal, { limit: q.limit, startingAfter: q.starting_after, type: q.type, gte: q['created[gte]'], lt: q['created[lt]'] });
  }
}
