import { Body, Controller, Get, HttpCode, Param, Post, Req } from '@nestjs/common';
import { ApiConflictResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { CurrentPrincipal, Public } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ErrorBody } from '../../common/errors/error-body';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { Runs } from '../../kernel/http';
import { ConfirmWalletDto, ProviderCallbackAckDto, VerificationDto, VerificationStartDto, WalletCheckDto } from './dto/verification.dto';
import { CONFIRM_WALLET_CHECK, GET_VERIFICATION, START_IDENTITY_CHECK, START_WALLET_CHECK, VerificationOperations } from './verification.operations';
import { VerificationService } from './verification.service';

const REJECTED = '403 kyb_rejected once the organisation’s verification is rejected (until the operator reopens it).';

/** The organisation's verification (docs/api.md: `/verification`; docs/architecture.md §12). */
@ApiTags('verification')
@Controller('api/v1/verification')
@ApiStandardErrors()
export class VerificationController {
  constructor(
    private readonly verification: VerificationService,
    private readonly ops: VerificationOperations,
  ) {}

  @Get()
  @Runs(GET_VERIFICATION)
  @ApiOperation({ summary: 'KYB status: the wallet check and the identity check; verified when both passed' })
  @ApiOkResponse({ type: VerificationDto })
  get(@CurrentPrincipal() p: Principal): Promise<VerificationDto> {
    return this.verification.get(p.organizationId);
  }

  @Post('checkout')
  @HttpCode(200)
  @Runs(START_WALLET_CHECK)
  @ApiOperation({
    summary: 'Start the wallet check: an exact USDC amount to send from the payout address',
    description: `Send exactly \`amount\` USDC from \`address\` to \`payTo\` within 90 minutes, then confirm with the transaction hash. A second call while the check is open returns the same one. ${REJECTED}`,
  })
  @ApiOkResponse({ type: WalletCheckDto })
  @ApiConflictResponse({ description: 'invalid_request: no payout address (details.reason no_payout_address), or the wallet check already passed', type: ErrorBody })
  checkout(@CurrentPrincipal() p: Principal) {
    return this.ops.startWalletCheck.work({ principal: p, params: {} }, {});
  }

  @Post('confirm')
  @HttpCode(200)
  @Runs(CONFIRM_WALLET_CHECK)
  @ApiOperation({
    summary: 'Confirm the wallet check with the USDC transfer’s transaction hash',
    description: `Verified on chain: from the payout address, to payTo, exactly the amount, mined within the window, not used before; else 400 with details.reason. ${REJECTED}`,
  })
  @ApiOkResponse({ type: VerificationDto })
  @ApiConflictResponse({ description: 'invalid_request: no wallet check issued, or the transaction is not mined yet (details.reason pending, not recorded)', type: ErrorBody })
  confirm(@CurrentPrincipal() p: Principal, @Body() body: ConfirmWalletDto) {
    return this.ops.confirmWalletCheck.work({ principal: p, params: {} }, body);
  }

  @Post('start')
  @HttpCode(200)
  @Runs(START_IDENTITY_CHECK)
  @ApiOperation({
    summary: 'Start the identity check with the identity provider; open verificationUrl in a browser',
    description: `A new single-use URL per call until the check is decided. ${REJECTED}`,
  })
  @ApiOkResponse({ type: VerificationStartDto })
  @ApiConflictResponse({ description: 'invalid_request: the identity check already passed', type: ErrorBody })
  start(@CurrentPrincipal() p: Principal) {
    return this.ops.startIdentityCheck.work({ principal: p, params: {} }, {});
  }

  /**
   * The identity provider's signed callback (Stripe: `identity.verification_session.*` events with
   * `Stripe-Signature`; sandbox: Standard Webhooks headers). Verified over the raw body; 400
   * `bad_signature` changes nothing; 404 for a provider other than `IDENTITY_PROVIDER`.
   */
  @Post('providers/:provider/webhook')
  @HttpCode(200)
  @Public()
  @ApiOperation({
    summary: 'Identity provider callback (called by the provider, not by merchants)',
    description: 'Stripe: `identity.verification_session.*` events signed with `Stripe-Signature`. Sandbox: Standard Webhooks headers. 400 `bad_signature` changes nothing.',
  })
  @ApiParam({ name: 'provider', enum: ['sandbox', 'stripe'] })
  @ApiOkResponse({ type: ProviderCallbackAckDto })
  @ApiNotFoundResponse({ description: 'not_found: this provider is not the configured IDENTITY_PROVIDER', type: ErrorBody })
  callback(@Param('provider') provider: string, @Req() req: Request & { rawBody?: Buffer }): Promise<ProviderCallbackAckDto> {
    if (!req.rawBody) throw AppError.invalidParam('body', 'must be the provider’s JSON event');
    return this.verification.handleProviderCallback(provider, req.rawBody, req.headers);
  }
}
