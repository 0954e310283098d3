import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Equals, IsOptional, IsString, MaxLength } from 'class-validator';

/** Body of POST /oauth/token (RFC 6749 §4.4, JSON or form-encoded). */
export class TokenRequestDto {
  @ApiProperty({ enum: ['client_credentials'] })
  @Equals('client_credentials', { message: 'grant_type must be client_credentials' })
  grant_type: string;
  @ApiProperty() @IsString() @MaxLength(200) client_id: string;
  @ApiProperty() @IsString() @MaxLength(200) client_secret: string;
  @ApiPropertyOptional({ description: 'Space-separated subset of the client scopes' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  scope?: string;
}

export class TokenResponseDto {
  @ApiProperty({ example: 'bat_…' }) access_token: string;
  @ApiProperty({ enum: ['Bearer'] }) token_type: 'Bearer';
  @ApiProperty({ description: 'Lifetime in seconds' }) expires_in: number;
  @ApiProperty({ description: 'Space-separated granted scopes' }) scope: string;
}
