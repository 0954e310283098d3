import { ApiProperty } from '@nestjs/swagger';
import { FeeQuoteDto } from '../../fees/fees.dto';
import { ListEnvelopeDto } from '../../../common/http/list.dto';
import { CHECKOUT_STATUSES, ESCROW_TEMPLATES } from '../checkout.entity';

/** CheckoutSession of docs/api.md "CheckoutSession" plus expiresAt, updatedAt, offeringId, quantity and invoiceId. */
export class CheckoutSessionDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: '12.50', description: 'Decimal USDC amount as text' }) amount: string;
  @ApiProperty({ example: '0.00', description: 'Succeeded refunds of this checkout (DESIGN §21); a refunded checkout stays released' }) refundedAmount: string;
  @ApiProperty() description: string;
  @ApiProperty({ enum: CHECKOUT_STATUSES }) status: string;
  @ApiProperty({ enum: ['escrow'] }) settlement: 'escrow';
  @ApiProperty({ type: String, nullable: true }) orderId: string | null;
  @ApiProperty({ type: String, nullable: true }) shopDomain: string | null;
  @ApiProperty({ type: String, nullable: true }) escrowId: string | null;
  @ApiProperty({ enum: ESCROW_TEMPLATES }) escrowTemplateId: string;
  @ApiProperty({ format: 'uri', example: 'https://pay.example.com/checkout/0193…' }) payUrl: string;
  @ApiProperty({ type: String, nullable: true }) redirectUrl: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) metadata: Record<string, unknown> | null;
  @ApiProperty() fee: FeeQuoteDto;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', description: 'The offering sold (docs/architecture.md §11)' }) offeringId: string | null;
  @ApiProperty({ type: Number, nullable: true, minimum: 1, maximum: 100, description: 'Units of the offering; null without one' }) quantity: number | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', description: 'The invoice this session pays, if any' }) invoiceId: string | null;
  @ApiProperty({ format: 'date-time' }) expiresAt: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class CheckoutSessionListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [CheckoutSessionDto] }) data: CheckoutSessionDto[];
}
