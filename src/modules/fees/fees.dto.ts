import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { FEE_SOURCES } from '@lib/money';
import type { FeeSource } from '@lib/money';
import { IsAmount } from '../../common/validation/validators';

/** FeeQuote of docs/api.md "FeeQuote". */
export class FeeQuoteDto {
  @ApiProperty({ enum: FEE_SOURCES }) source: FeeSource;
  @ApiProperty({ example: '12.50' }) grossAmount: string;
  @ApiProperty({ example: '0.00' }) feeAmount: string;
  @ApiProperty({ example: '12.50' }) netAmount: string;
  @ApiProperty({ example: 0, description: 'Fee in basis points' }) bps: number;
  @ApiProperty({ enum: ['USDC'] }) currency: 'USDC';
}

export class FeeQuoteQueryDto {
  @ApiPropertyOptional({ enum: FEE_SOURCES, default: 'checkout' })
  @IsOptional()
  @IsIn(FEE_SOURCES, { message: `source must be one of ${FEE_SOURCES.join(', ')}` })
  source?: FeeSource;

  @IsAmount()
  amount: string;
}
