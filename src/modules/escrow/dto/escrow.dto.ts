import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { ListEnvelopeDto, ListQueryDto } from '../../../common/http/list.dto';
import { ESCROW_STATUSES } from '../escrow.state';
import type { EscrowStatus } from '../escrow.state';

export class EscrowPartyDto {
  @ApiProperty({ example: '0x90F79bf6EB2c4f870365E785982E1f101E93b906' }) address: string;
  @ApiProperty({ description: 'Whether this party is your organisation' }) you: boolean;
}

export class EscrowTransactionDto {
  @ApiProperty({ enum: ['funded', 'accepted', 'declined', 'delivered', 'released', 'cancelled', 'disputed', 'resolved'] }) action: string;
  @ApiProperty() txHash: string;
  @ApiProperty() blockNumber: number;
  @ApiProperty({ type: String, nullable: true, description: 'Transaction sender, when known' }) from: string | null;
  @ApiProperty({ format: 'date-time', description: 'When the service applied it' }) recordedAt: string;
}

export class EscrowChainDto {
  @ApiProperty() chainId: number;
  @ApiProperty() contract: string;
  @ApiProperty({ description: 'bytes32 escrow id on the contract' }) escrowKey: string;
}

export class EscrowTermsMismatchDto {
  @ApiProperty({ enum: ['amount', 'seller', 'inspectionWindow', 'escrowAttempt', 'buyer'], description: "escrowAttempt: an escrow id the checkout no longer offers (a cancelled attempt); buyer: an agent escrow's checkout funded by someone other than the agent's signer" }) field: 'amount' | 'seller' | 'inspectionWindow' | 'escrowAttempt' | 'buyer';
  @ApiProperty({ description: 'What the checkout and its organisation say (base units, address or seconds)' }) expected: string;
  @ApiProperty({ description: 'What the Funded event says' }) actual: string;
}

/** Why an escrow is held from its checkout (docs/decisions.md "Funded terms are checked"). */
export class EscrowFlagDto {
  @ApiProperty({ enum: ['terms_mismatch'] }) reason: 'terms_mismatch';
  @ApiProperty({ type: [EscrowTermsMismatchDto] }) mismatches: EscrowTermsMismatchDto[];
}

/** An escrow (docs/architecture.md §7); amounts are decimal USDC text. */
export class EscrowDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: ESCROW_STATUSES }) status: EscrowStatus;
  @ApiProperty({ enum: ['buyer', 'seller', 'buyer_and_seller'], description: 'Your role in this escrow' }) role: string;
  @ApiProperty({ type: String, nullable: true }) checkoutSessionId: string | null;
  @ApiProperty() buyer: EscrowPartyDto;
  @ApiProperty() seller: EscrowPartyDto;
  @ApiProperty({ example: '25.00' }) amount: string;
  @ApiProperty({ enum: ['USDC'] }) currency: 'USDC';
  @ApiProperty() escrowTemplateId: string;
  @ApiProperty({ description: 'Inspection window after delivery, seconds' }) inspectionWindowSeconds: number;
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) deliveredAt: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', description: 'When anyone may release (delivered escrows)' })
  autoReleaseAt: string | null;
  @ApiProperty({
    type: EscrowFlagDto,
    nullable: true,
    description: 'Set when the on-chain funding terms differ from the checkout: the escrow never updates the checkout or sends webhooks',
  })
  flag: EscrowFlagDto | null;
  @ApiProperty() chain: EscrowChainDto;
  @ApiProperty({ type: [EscrowTransactionDto] }) transactions: EscrowTransactionDto[];
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class EscrowListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [EscrowDto] }) data: EscrowDto[];
}

export class EscrowListQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: ['buyer', 'seller'] })
  @IsOptional()
  @IsIn(['buyer', 'seller'], { message: 'role must be buyer or seller' })
  role?: 'buyer' | 'seller';

  @ApiPropertyOptional({ enum: ESCROW_STATUSES })
  @IsOptional()
  @IsIn(ESCROW_STATUSES, { message: `status must be one of ${ESCROW_STATUSES.join(', ')}` })
  status?: EscrowStatus;
}

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

/** Body of accept and mark-delivered: the party's transaction (docs/api.md Escrow action rules 1). */
export class EscrowActionDto {
  @ApiProperty({ description: 'Hash of the transaction the party signed and sent first', example: '0x' + 'ab'.repeat(32) })
  @IsString({ message: 'txHash must be a string' })
  @Matches(TX_HASH, { message: 'txHash must be a 0x-prefixed 32-byte hex transaction hash' })
  txHash: string;

  @ApiPropertyOptional({ type: Boolean, description: 'Required and must be true for release and dispute' })
  @IsOptional()
  confirm?: unknown;
}

/** Body of release and dispute: also `confirm: true` (docs/api.md Escrow action rules 2; else 400 confirm_required). */
export class ConfirmedEscrowActionDto extends EscrowActionDto {
  @ApiProperty({ enum: [true], description: 'Must be literally true, else 400 confirm_required' })
  declare confirm?: unknown;
}

/** EIP-712 funding terms a payer submits to CheckoutEscrow (docs/architecture.md §7). */
export class FundingTermsDto {
  @ApiProperty({ description: 'bytes32 escrow id (the checkout id, left-padded)' }) escrowId: string;
  @ApiProperty({ type: String, nullable: true, description: 'The only address that may fund these terms (the `buyer` query parameter); null when none was given' })
  buyer: string | null;
  @ApiProperty() seller: string;
  @ApiProperty({ description: 'USDC base units (6 decimals) as a decimal integer string', example: '25000000' }) amount: string;
  @ApiProperty({ description: 'Seconds after delivery before anyone may release' }) inspectionWindow: number;
  @ApiProperty({ description: 'Unix seconds; funding after it reverts' }) deadline: number;
}

/** What a payer (the pay page, a wallet, the demo CLI) needs to fund a checkout's escrow. */
export class CheckoutFundingDto {
  @ApiProperty({ format: 'uuid' }) checkoutSessionId: string;
  @ApiProperty({ example: '25.00' }) amount: string;
  @ApiProperty() chainId: number;
  @ApiProperty() escrowContract: string;
  @ApiProperty() token: string;
  @ApiProperty() terms: FundingTermsDto;
  @ApiProperty({ type: String, nullable: true, description: 'EIP-712 signature of the terms by the service terms key; null unless `buyer` was given' })
  termsSignature: string | null;
  @ApiProperty({ format: 'date-time' }) expiresAt: string;
}

/** Query of GET /checkout-sessions/{id}/funding-terms: the wallet that will fund (contract v2 terms bind the buyer). */
export class FundingTermsQueryDto {
  @ApiPropertyOptional({ description: 'Address of the funding wallet; the terms are signed for it alone', example: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' })
  @IsOptional()
  @IsString()
  @Matches(/^0x[0-9a-fA-F]{40}$/, { message: 'buyer must be a 0x-prefixed 20-byte hex address' })
  buyer?: string;
}
