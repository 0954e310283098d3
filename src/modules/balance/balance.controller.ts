import { Controller, Get, Query, StreamableFile } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { Readable } from 'node:stream';
import { CurrentPrincipal } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { Runs } from '../../kernel/http';
import { BalanceExportQueryDto, BalanceTransactionListDto, BalanceTransactionListQueryDto } from './dto/balance-transaction.dto';
import { EXPORT_BALANCE_TRANSACTIONS, LIST_BALANCE_TRANSACTIONS } from './balance.operations';
import { BalanceService } from './balance.service';

/** docs/api.md "Balance transactions"; the rules are in {@link BalanceService}. */
@ApiTags('balance-transactions')
@Controller('api/v1/balance-transactions')
export class BalanceController {
  constructor(private readonly balance: BalanceService) {}

  @Get()
  @Runs(LIST_BALANCE_TRANSACTIONS)
  @ApiOperation({ summary: 'List balance transactions (the USDC movements of your organisation), newest first; filter by type and block time' })
  @ApiOkResponse({ type: BalanceTransactionListDto })
  @ApiStandardErrors()
  list(@CurrentPrincipal() p: Principal, @Query() q: BalanceTransactionListQueryDto): Promise<BalanceTransactionListDto> {
    return this.balance.list(p, { limit: q.limit, startingAfter: q.starting_after, type: q.type, gte: q['created[gte]'], lt: q['created[lt]'] });
  }

  @Get('export')
  @Runs(EXPORT_BALANCE_TRANSACTIONS)
  @ApiOperation({
    summary: 'Statement export: the balance transactions of [from, to) as CSV (RFC 4180), oldest first',
    description: 'A header row naming the fields, decimal text, UTC times; streamed. A window over one year → 400.',
  })
  @ApiProduces('text/csv')
  @ApiOkResponse({ description: 'text/csv; header: id,type,amount,fee,net,currency,sourceType,sourceId,txHash,logIndex,blockNumber,blockTimestamp', schema: { type: 'string' } })
  @ApiStandardErrors()
  export(@CurrentPrincipal() p: Principal, @Query() q: BalanceExportQueryDto): StreamableFile {
    const { from, to } = this.balance.exportWindow(q.from, q.to);
    const name = `balance-transactions_${from.toISOString().slice(0, 10)}_${to.toISOString().slice(0, 10)}.csv`;
    return new StreamableFile(Readable.from(this.balance.exportCsv(p, from, to)), {
      type: 'text/csv; charset=utf-8; header=present',
      disposition: `attachment; filename="${name}"`,
    });
  }
}
