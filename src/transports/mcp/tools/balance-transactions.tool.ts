import { Injectable } from '@nestjs/common';
import { BalanceTransactionListQueryDto } from '../../../modules/balance/dto/balance-transaction.dto';
import { LIST_BALANCE_TRANSACTIONS } from '../../../modules/balance/balance.operations';
import { BalanceService } from '../../../modules/balance/balance.service';
import type { McpToolContext, ServiceTool } from '../mcp-tool';

/** svc_balance_transaction_list: GET /api/v1/balance-transactions (access and input from LIST_BALANCE_TRANSACTIONS, declared once). */
@Injectable()
export class BalanceTransactionListTool implements ServiceTool<BalanceTransactionListQueryDto & Record<string, unknown>> {
  readonly name = 'svc_balance_transaction_list';
  readonly title = 'List balance transactions';
  readonly description = 'The USDC movements of your organisation (escrow releases, payments and x402 settlements received, refunds), newest first; signed decimal amounts.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = LIST_BALANCE_TRANSACTIONS;
  constructor(private readonly balance: BalanceService) {}
  run(ctx: McpToolContext, q: BalanceTransactionListQueryDto) {
    return this.balance.list(ctx.principal, { limit: q.limit, startingAfter: q.starting_after, type: q.type, gte: q['created[gte]'], lt: q['created[lt]'] });
  }
}
