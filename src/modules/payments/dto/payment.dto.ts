import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { ListEnvelopeDto, ListQueryDto } from '../../../common/http/list.dto';
import { PAYMENT_STATUSES } from '../payment.entity';

/** POST /payments body (docs/api.md): pay `amount` USDC to a handle (organisation or agent slug). */
export class CreatePaymentDto {
  @ApiProperty({ description: 'Payee handle: an organisation handle (pays its payout address) or an agent slug (pays its signer)', example: 'acme' })
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  to: string;

  @ApiProperty({ description: 'USDC decimal text, > 0, at most 6 decimals, ≤ MAX_AMOUNT', example: '20.00' })
  @IsString()
  amount: string;
}

/** A payment as the API renders it (docs/architecture.md §13). */
export class PaymentDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: PAYMENT_STATUSES }) status: string;
  @ApiProperty({ description: 'Payee handle' }) to: string;
  @ApiProperty({ description: 'Resolved payee address, fixed at reservation' }) toAddress: string;
  @ApiProperty({ example: '20.00' }) amount: string;
  @ApiProperty({ example: '0.00' }) fee: string;
  @ApiProperty({ type: String, nullable: true, description: 'Transaction that used the authorization on chain (set when succeeded)' }) txHash: string | null;
  @ApiProperty({ enum: ['instant', 'x402', 'a2a', 'escrow'] }) mode: string;
  @ApiProperty({ type: String, nullable: true }) mandateId: string | null;
  @ApiProperty({ type: String, nullable: true }) taskId: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Why a failed payment failed (expired, cancelled, agents_disabled)' }) failureReason: string | null;
  @ApiProperty({ example: '0.00', description: 'Succeeded refunds of this payment by its payee (DESIGN §21)' }) refundedAmount?: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class PaymentListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [PaymentDto] }) data: PaymentDto[];
}

export class PaymentListQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: PAYMENT_STATUSES })
  @IsOptional()
  @IsIn(PAYMENT_STATUSES as unknown as string[])
  status?: string;
}

/**
 * Arguments of svc_get_payment_status (DESIGN §15): exactly one of `paymentId` (an agent's payment)
 * and `checkoutSessionId` (a checkout with its escrow). An id that is not a UUID is not found (404),
 * as on the REST paths the two read.
 */
export class PaymentStatusQueryDto {
  @ApiPropertyOptional({ description: 'An agent payment id (agent keys, or refund:read for a payment received)' })
  @IsOptional()
  @IsString({ message: 'paymentId must be a string' })
  paymentId?: string;

  @ApiPropertyOptional({ description: 'A checkout session id: its status, and its escrow once funded (escrow:read)' })
  @IsOptional()
  @IsString({ message: 'checkoutSessionId must be a string' })
  checkoutSessionId?: string;
}
