import { Body, Controller, Get, Headers, HttpCode, Module, Post, Query, Res } from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiForbiddenResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiPaymentRequiredResponse, ApiProperty, ApiPropertyOptional, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import type { Response } from 'express';
import { CurrentPrincipal, Public } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { ErrorBody } from '../../common/errors/error-body';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { AgentsModule } from '../../modules/agents/agents.module';
import { PaymentsModule } from '../../modules/payments/payments.module';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { SPEND_REFUSALS } from '../../modules/payments/payments.controller';
import { SettleX402Dto } from '../../modules/payments/dto/x402-settle.dto';
import { SETTLE_X402 } from '../../modules/payments/payments.operations';
import { Runs } from '../../kernel/http';
import { X402Service } from './x402.service';

/** Query of GET /x402/challenge: all optional (docs/architecture.md §14). */
export class X402ChallengeQueryDto {
  @ApiPropertyOptional({ description: 'Organisation handle or agent slug to pay (default X402_DEFAULT_PAY_TO)', example: 'acme' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  to?: string;

  @ApiPropertyOptional({ description: 'USDC decimal text (default X402_DEFAULT_AMOUNT; at least X402_MIN_AMOUNT)', example: '0.10' })
  @IsOptional()
  @IsString()
  @MaxLength(40)
  amount?: string;

  @ApiPropertyOptional({ description: 'The resource URL the payment is for (default: this challenge URL)' })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  resource?: string;
}

/** 402 body: x402 v1 PaymentRequired (the v2 form is in the PAYMENT-REQUIRED header). */
export class X402PaymentRequiredDto {
  @ApiProperty({ example: 1 }) x402Version: number;
  @ApiProperty() error: string;
  @ApiPropertyOptional({ description: 'Machine-readable reason of a refused payment' }) reason?: string;
  @ApiProperty({ type: 'array', items: { type: 'object', additionalProperties: true } }) accepts: Array<Record<string, unknown>>;
}

/** 200 body of a paid retry (the receipt is also in PAYMENT-RESPONSE). */
export class X402PaidDto {
  @ApiProperty() paid: boolean;
  @ApiProperty() resource: string;
  @ApiProperty() payTo: string;
  @ApiProperty({ example: '0.10' }) amount: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) settlement: Record<string, unknown>;
}

/** POST /x402/settle answer: `{payment, settlement}` (our challenge) or `{payment, header}` (another server's). */
export class X402SettleResultDto {
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The Payment (mode x402)' }) payment: Record<string, unknown>;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Our own challenge: {success, transaction, network, payer}' }) settlement?: Record<string, unknown>;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Another server’s challenge: {name: PAYMENT-SIGNATURE | X-PAYMENT, value}' }) header?: Record<string, unknown>;
}

/** The x402 routes (docs/architecture.md §14, docs/api.md). */
@ApiTags('agents')
@ApiExtraModels(X402PaymentRequiredDto)
@Controller('api/v1/x402')
export class X402Controller {
  constructor(private readonly x402: X402Service) {}

  @Get('challenge')
  @Public()
  @ApiOperation({
    summary: 'x402 challenge: 402 with PAYMENT-REQUIRED (v2) and the v1 body; a retry with PAYMENT-SIGNATURE or X-PAYMENT is verified, settled and answered 200 with PAYMENT-RESPONSE',
  })
  @ApiHeader({ name: 'PAYMENT-SIGNATURE', required: false, description: 'x402 v2 payment payload (base64 JSON)' })
  @ApiHeader({ name: 'X-PAYMENT', required: false, description: 'x402 payment payload (base64 JSON; v2 payloads accepted)' })
  @ApiOkResponse({ type: X402PaidDto, description: 'Paid: PAYMENT-RESPONSE carries the settlement' })
  @ApiPaymentRequiredResponse({ schema: { $ref: getSchemaPath(X402PaymentRequiredDto) }, description: 'Payment required (or refused: `reason`); PAYMENT-REQUIRED carries the v2 requirements' })
  @ApiStandardErrors()
  async challenge(
    @Query() q: X402ChallengeQueryDto,
    @Headers('payment-signature') v2?: string,
    @Headers('x-payment') v1?: string,
    @Res({ passthrough: true }) res?: Response,
  ): Promise<Record<string, unknown>> {
    const header = v2 ?? v1;
    const answer = header ? await this.x402.paid(q, header) : await this.x402.challenge(q);
    res!.status(answer.status);
    for (const [name, value] of Object.entries(answer.headers)) res!.setHeader(name, value);
    res!.setHeader('Access-Control-Expose-Headers', 'PAYMENT-REQUIRED, PAYMENT-RESPONSE');
    return answer.body;
  }

  @Post('settle')
  @HttpCode(200)
  @Runs(SETTLE_X402)
  @ApiOperation({
    summary: 'Pay an x402 challenge under the agent policy (Payment mode x402)',
    description:
      'Body: one v1 `accepts` entry as it is, or `{paymentRequired: "<PAYMENT-REQUIRED value>"}`. Only scheme exact, this network and our USDC are signed ' +
      '(400 details.reason unsupported_requirement). Our own challenges are settled on chain → {payment, settlement}; another server’s → {payment, header} to send.',
  })
  @ApiBody({ type: SettleX402Dto })
  @ApiOkResponse({ type: X402SettleResultDto })
  @ApiForbiddenResponse({ description: SPEND_REFUSALS, type: ErrorBody })
  @ApiStandardErrors()
  settle(@CurrentPrincipal() p: Principal, @Body() body: SettleX402Dto, @Headers('idempotency-key') key?: string) {
    return this.x402.settle(p, body, key);
  }
}

/** x402 (api only). */
@Module({
  imports: [AgentsModule, PaymentsModule, RelayerModule],
  controllers: [X402Controller],
  providers: [X402Service],
})
export class X402HttpModule {}
