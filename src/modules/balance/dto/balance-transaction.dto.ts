import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsISO8601, IsOptional } from 'class-validator';
import { ListEnvelopeDto, ListQueryDto } from '../../../common/http/list.dto';
import { BALANCE_TRANSACTION_TYPES, type BalanceTransactionType } from '../balance-transaction.entity';

/** A balance transaction as the API renders it (DESIGN §21; docs/api.md "Balance transactions"). */
export class BalanceTransactionDto {
  @ApiProperty({ format: 'uuid', description: 'UUIDv5 of (txHash, logIndex): the same row keeps its id when a reorg removes and re-adds it' }) id: string;
  @ApiProperty({ enum: BALANCE_TRANSACTION_TYPES, example: 'escrow_release' }) type: BalanceTransactionType;
  @ApiProperty({ example: '25.00', description: 'Signed decimal USDC: positive in, negative out ("-0.40")' }) amount: string;
  @ApiProperty({ example: '0.00', description: 'Signed decimal USDC (users pay 0 %)' }) fee: string;
  @ApiProperty({ example: '25.00', description: 'amount − fee, signed decimal USDC' }) net: string;
  @ApiProperty({ enum: ['USDC'] }) currency: 'USDC';
  @ApiProperty({ enum: ['checkout_session', 'escrow', 'payment', 'x402_settlement', 'refund'], example: 'checkout_session' }) sourceType: string;
  @ApiProperty({ format: 'uuid' }) sourceId: string;
  @ApiProperty({ example: '0x5f…', description: 'The transaction of the USDC Transfer log' }) txHash: string;
  @ApiProperty({ example: 3, description: 'Index of the USDC Transfer log in its block' }) logIndex: number;
  @ApiProperty({ example: 123456 }) blockNumber: number;
  @ApiProperty({ format: 'date-time', description: 'Block time, UTC' }) blockTimestamp: string;
}

export class BalanceTransactionListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [BalanceTransactionDto] }) data: BalanceTransactionDto[];
}

const TYPE_MESSAGE = `type must be one of ${BALANCE_TRANSACTION_TYPES.join(', ')}`;

/** Query of GET /balance-transactions: the list parameters, `type`, and the block-time window `created[gte]` ≤ t < `created[lt]`. */
export class BalanceTransactionListQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: BALANCE_TRANSACTION_TYPES })
  @IsOptional()
  @IsIn(BALANCE_TRANSACTION_TYPES, { message: TYPE_MESSAGE })
  type?: BalanceTransactionType;

  @ApiPropertyOptional({ name: 'created[gte]', format: 'date-time', description: 'Block time at or after (ISO-8601)' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'created[gte] must be an ISO-8601 date-time' })
  'created[gte]'?: string;

  @ApiPropertyOptional({ name: 'created[lt]', format: 'date-time', description: 'Block time before (ISO-8601)' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'created[lt] must be an ISO-8601 date-time' })
  'created[lt]'?: string;
}

/** Query of GET /balance-transactions/export: the block-time window [from, to), at most one year. */
export class BalanceExportQueryDto {
  @ApiProperty({ format: 'date-time', description: 'Start (inclusive), ISO-8601 date or date-time; UTC when no offset is given' })
  @IsISO8601({ strict: true }, { message: 'from must be an ISO-8601 date or date-time' })
  from: string;

  @ApiProperty({ format: 'date-time', description: 'End (exclusive), at most one year after from' })
  @IsISO8601({ strict: true }, { message: 'to must be an ISO-8601 date or date-time' })
  to: string;
}
