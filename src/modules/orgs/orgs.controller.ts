import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { CredentialExchange, CurrentPrincipal } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { ErrorBody } from '../../common/errors/error-body';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { NoStore } from '../../common/http/no-store.decorator';
import { MeDto, PayoutBalanceDto } from './dto/me.dto';
import { TokenRequestDto, TokenResponseDto } from './dto/token.dto';
import { OrgsService } from './orgs.service';
import { PayoutBalanceService } from './payout-balance.service';
import { GET_ME, GET_PAYOUT_BALANCE } from './orgs.operations';
import { Runs } from '../../kernel/http';

@ApiTags('identity')
@Controller('api/v1')
export class MeController {
  constructor(
    private readonly orgs: OrgsService,
    private readonly payout: PayoutBalanceService,
  ) {}

  @Get('me')
  @Runs(GET_ME)
  @ApiOperation({ summary: 'Identity, organisation, scopes and verification snapshot of the caller' })
  @ApiOkResponse({ type: MeDto })
  @ApiStandardErrors()
  me(@CurrentPrincipal() principal: Principal): Promise<MeDto> {
    return this.orgs.me(principal);
  }

  @Get('payout-balance')
  @Runs(GET_PAYOUT_BALANCE)
  @ApiOperation({ summary: "USDC and ETH of the organisation's payout address, read from the chain (503 unavailable when the node does not answer within RPC_TIMEOUT_MS)" })
  @ApiOkResponse({ type: PayoutBalanceDto })
  @ApiServiceUnavailableResponse({ description: 'unavailable (details.reason chain_unavailable): the node did not answer in time', type: ErrorBody })
  @ApiStandardErrors()
  payoutBalance(@CurrentPrincipal() principal: Principal): Promise<PayoutBalanceDto> {
    return this.payout.read(principal.organizationId);
  }
}

@ApiTags('identity')
@Controller('oauth')
export class OAuthController {
  constructor(private readonly orgs: OrgsService) {}

  @Post('token')
  @CredentialExchange()
  @HttpCode(200)
  @NoStore()
  @ApiOperation({ summary: 'Client-credentials grant: exchange an OAuth client id and secret for a bat_ access token' })
  @ApiOkResponse({ type: TokenResponseDto })
  @ApiUnauthorizedResponse({ type: ErrorBody })
  @ApiStandardErrors()
  token(@Body() body: TokenRequestDto): Promise<TokenResponseDto> {
    return this.orgs.issueToken({ clientId: body.client_id, clientSecret: body.client_secret, scope: body.scope });
  }
}
