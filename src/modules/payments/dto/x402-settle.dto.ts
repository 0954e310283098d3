import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsNotEmpty, IsNumber, IsObject, IsOptional, IsPositive, IsString, MaxLength, ValidateIf } from 'class-validator';

/** A v1 field: required (a non-empty string) unless `paymentRequired` is given; checked whenever present. */
const V1_FIELD = ValidateIf((o: SettleX402Dto, value: unknown) => value !== undefined || o.paymentRequired == null);
const V1_REQUIRED = 'required (a v1 accepts entry) unless paymentRequired is given';

/**
 * POST /api/v1/x402/settle body (DESIGN §14; docs/api.md): either `{paymentRequired}`, the
 * `PAYMENT-REQUIRED` header value of an x402 v2 challenge (base64 JSON), or one x402 v1 `accepts`
 * entry as the 402 body gave it (`PaymentRequirementsV1` of `@x402/core/types/v1`: `scheme`,
 * `network`, `maxAmountRequired` in USDC base units as decimal integer text, `resource`, `payTo`,
 * `asset`, and the optional `description`, `mimeType`, `maxTimeoutSeconds`, `extra`,
 * `outputSchema`). Every field a v1 entry carries is declared, since unknown fields are refused
 * (DESIGN §4). `paymentRequired` wins when both are given, as before the DTO. Only the shape is
 * checked here; scheme, network, asset and amount are judged by the service (400
 * `unsupported_requirement`).
 */
export class SettleX402Dto {
  @ApiPropertyOptional({ description: 'The PAYMENT-REQUIRED header value of an x402 v2 challenge (base64 JSON). When given, the v1 fields are not required.' })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(65_536)
  paymentRequired?: string;

  @ApiPropertyOptional({ description: `v1: the scheme; only "exact" is signed (${V1_REQUIRED})`, example: 'exact' })
  @V1_FIELD
  @IsString()
  @IsNotEmpty({ message: `scheme is ${V1_REQUIRED}` })
  @MaxLength(64)
  scheme?: string;

  @ApiPropertyOptional({ description: `v1: the network, a v1 name or a CAIP-2 id; only this service's chain is signed (${V1_REQUIRED})`, example: 'base-sepolia' })
  @V1_FIELD
  @IsString()
  @IsNotEmpty({ message: `network is ${V1_REQUIRED}` })
  @MaxLength(128)
  network?: string;

  @ApiPropertyOptional({ description: `v1: the amount in USDC base units, decimal integer text (${V1_REQUIRED})`, example: '250000' })
  @V1_FIELD
  @IsString()
  @IsNotEmpty({ message: `maxAmountRequired is ${V1_REQUIRED}` })
  @MaxLength(80)
  maxAmountRequired?: string;

  @ApiPropertyOptional({ description: `v1: the URL of the resource paid for (${V1_REQUIRED})`, example: 'https://api.example.com/api/v1/x402/challenge?to=acme&amount=0.25' })
  @V1_FIELD
  @IsString()
  @IsNotEmpty({ message: `resource is ${V1_REQUIRED}` })
  @MaxLength(2048)
  resource?: string;

  @ApiPropertyOptional({ description: `v1: the payee address (${V1_REQUIRED})`, example: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed' })
  @V1_FIELD
  @IsString()
  @IsNotEmpty({ message: `payTo is ${V1_REQUIRED}` })
  @MaxLength(64)
  payTo?: string;

  @ApiPropertyOptional({ description: `v1: the token address; only this service's USDC is signed (${V1_REQUIRED})`, example: '0x036CbD53842c5426634e7929541eC2318f3dCF7e' })
  @V1_FIELD
  @IsString()
  @IsNotEmpty({ message: `asset is ${V1_REQUIRED}` })
  @MaxLength(64)
  asset?: string;

  @ApiPropertyOptional({ description: 'v1: what the resource is (not used)' })
  @IsOptional()
  @IsString()
  @MaxLength(4096)
  description?: string;

  @ApiPropertyOptional({ description: 'v1: the media type of the resource (not used)', example: 'application/json' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  mimeType?: string;

  @ApiPropertyOptional({ description: 'v1: the longest validity the server accepts, in seconds (default 600; echoed in a v2 header)', example: 600 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsPositive()
  maxTimeoutSeconds?: number;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'v1: scheme data, e.g. the token’s EIP-712 domain {name, version}; never used for signing (the token’s own domain is)' })
  @IsOptional()
  @IsObject()
  extra?: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'v1: the schema of the resource’s output (not used)' })
  @IsOptional()
  @IsObject()
  outputSchema?: Record<string, unknown>;
}
