import { ApiProperty } from '@nestjs/swagger';

export class MeIdentityDto {
  @ApiProperty({ enum: ['merchant', 'agent', 'oauth', 'console'] }) type: 'merchant' | 'agent' | 'oauth' | 'console';
  @ApiProperty({ description: 'Id of the API key or OAuth access token used' }) credentialId: string;
  @ApiProperty({ type: String, nullable: true }) agentId: string | null;
}
export class MeOrganizationDto {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty() handle: string;
  @ApiProperty({ type: String, nullable: true }) payoutAddress: string | null;
}
export class VerificationSnapshotDto {
  @ApiProperty({ enum: ['unverified', 'pending', 'verified', 'rejected'] }) status: string;
}
/** Response of GET /api/v1/me (docs/api.md Endpoint table). */
export class MeDto {
  @ApiProperty() identity: MeIdentityDto;
  @ApiProperty() organization: MeOrganizationDto;
  @ApiProperty({ type: [String], description: 'Scopes as granted (before :* expansion)' }) scopes: string[];
  @ApiProperty() verification: VerificationSnapshotDto;
}

/** GET /api/v1/payout-balance: the payout address's balances on chain (decimal text). */
export class PayoutBalanceDto {
  @ApiProperty({ type: String, nullable: true, description: 'The payout address; null when the organisation has none (then every balance is null)' }) address: string | null;
  @ApiProperty({ type: String, nullable: true, example: '125.50', description: 'USDC held, 6 decimals' }) usdc: string | null;
  @ApiProperty({ type: String, nullable: true, example: '0.05', description: 'ETH held for gas (seller actions are sent from the payout wallet)' }) eth: string | null;
  @ApiProperty({ type: Number, nullable: true, description: 'Block the balances were read at' }) blockNumber: number | null;
}
