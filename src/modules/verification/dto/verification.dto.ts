import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
const STATUSES = ['unverified', 'pending', 'verified', 'rejected'];

/** The wallet check (docs/architecture.md §12): pay `amount` USDC from `address` to `payTo` before `expiresAt`. */
export class WalletCheckDto {
  @ApiProperty({ enum: ['unverified', 'pending', 'expired', 'verified'], description: 'expired: issued, unpaid and past expiresAt; a new checkout issues another' })
  status: string;
  @ApiProperty({ type: String, nullable: true, description: 'The payout address the payment must come from' }) address: string | null;
  @ApiProperty({ type: String, nullable: true, example: '1.482913', description: 'Exact USDC amount to send (decimal text)' }) amount: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'VERIFICATION_ADDRESS, the recipient' }) payTo: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'USDC token contract' }) token: string | null;
  @ApiProperty({ type: Number, nullable: true }) chainId: number | null;
  @ApiProperty({ type: String, nullable: true, description: 'The accepted transaction' }) txHash: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) createdAt: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', description: 'Issued + 90 minutes' }) expiresAt: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) verifiedAt: string | null;
}

/** The identity check through the configured provider. */
export class IdentityCheckDto {
  @ApiProperty({ type: String, nullable: true, description: 'sandbox or stripe; null before any session' }) provider: string | null;
  @ApiProperty({ enum: STATUSES }) status: string;
  @ApiProperty({ type: String, nullable: true, description: 'The open session’s page (the sandbox’s; a Stripe URL is returned by start only)' })
  verificationUrl: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The provider’s session id' }) reference: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Why the last attempt failed (provider words)' }) lastError: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', description: 'When the session link expires' }) expiresAt: string | null;
}

/** GET /api/v1/verification: the organisation's record; `verified` exactly when both checks passed. */
export class VerificationDto {
  @ApiProperty({ enum: STATUSES }) status: string;
  @ApiProperty({ type: WalletCheckDto }) wallet: WalletCheckDto;
  @ApiProperty({ type: IdentityCheckDto }) identity: IdentityCheckDto;
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) updatedAt: string | null;
}

/** POST /api/v1/verification/start: the page to open, single use. */
export class VerificationStartDto {
  @ApiProperty({ description: 'Open in a browser: the person completes the identity check there' }) verificationUrl: string;
  @ApiProperty({ format: 'date-time' }) expiresAt: string;
}

/** Body of POST /api/v1/verification/confirm. */
export class ConfirmWalletDto {
  @ApiProperty({ description: 'Hash of the USDC transfer you sent from the payout address', example: '0x' + 'ab'.repeat(32) })
  @IsString({ message: 'txHash must be a string' })
  @Matches(TX_HASH, { message: 'txHash must be a 0x-prefixed 32-byte hex transaction hash' })
  txHash: string;

  @ApiPropertyOptional({ description: 'Same as the Idempotency-Key header (MCP and clients that cannot set headers)' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  idempotencyKey?: string;
}

/** Provider callback acknowledgement. */
export class ProviderCallbackAckDto {
  @ApiProperty() received: boolean;
  @ApiProperty({ description: 'Whether it changed the identity check (false: another session, or already decided)' }) applied: boolean;
}
