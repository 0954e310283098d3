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
