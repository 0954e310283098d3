import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Public, RequireAgentKey } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ErrorBody } from '../../common/errors/error-body';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { ListQueryDto } from '../../common/http/list.dto';
import { Runs } from '../../kernel/http';
import { CreateMandateDto, MandateDto, MandateListDto, RevokeMandateDto } from './dto/mandate.dto';
import { MandatesService } from './mandates.service';
import { CREATE_MANDATE, MandatesOperations } from './mandates.operations';

const mandateId = new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound('mandate') });

/** AP2 intent mandates (docs/architecture.md §14). */
@ApiTags('agents')
@Controller('api/v1/mandates')
export class MandatesController {
  constructor(
    private readonly mandates: MandatesService,
    private readonly ops: MandatesOperations,
  ) {}

  @Post()
  @HttpCode(200)
  @Runs(CREATE_MANDATE)
  @ApiOperation({
    summary: 'Store an AP2 intent mandate signed by the agent’s owner wallet',
    description:
      'The credential (EIP-712 profile of the AP2 v0.1 IntentMandate, or an AP2 v0.2 SD-JWT open payment mandate signed ES256K under did:pkh) must be signed by the agent’s ownerAddress and state exactly the body’s terms; its nonce is single use per agent. ' +
      'With policy mode "mandate", every spend needs an active mandate covering payee and amount.',
  })
  @ApiOkResponse({ type: MandateDto })
  @ApiBadRequestResponse({
    description:
      'invalid_request: details.fields, or details.reason: unsupported_format, malformed, wrong_chain, signer_not_owner, bad_signature, unsupported_alg, unsupported_vct, unknown_constraint, unsupported_currency, terms_mismatch (details.field), expired, nonce_used',
    type: ErrorBody,
  })
  @ApiStandardErrors()
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateMandateDto) {
    return this.ops.create.work({ principal: p, params: {} }, body);
  }

  @Get()
  @RequireAgentKey('agent:mandate')
  @ApiOperation({ summary: "The agent's mandates, newest first, with usedAmount and status computed" })
  @ApiOkResponse({ type: MandateListDto })
  @ApiStandardErrors()
  list(@CurrentPrincipal() p: Principal, @Query() q: ListQueryDto): Promise<MandateListDto> {
    return this.mandates.list(p, { limit: q.limit, startingAfter: q.starting_after });
  }

  @Get(':id')
  @RequireAgentKey('agent:mandate')
  @ApiOperation({ summary: 'One mandate of the agent' })
  @ApiOkResponse({ type: MandateDto })
  @ApiStandardErrors({ notFound: true })
  get(@CurrentPrincipal() p: Principal, @Param('id', mandateId) id: string): Promise<MandateDto> {
    return this.mandates.get(p, id);
  }

  @Post(':id/revoke')
  @HttpCode(200)
  @Public()
  @ApiOperation({
    summary: 'Owner-signed RevokeMandate: the mandate stops covering spends at once',
    description: 'EIP-712 domain {name: "Payments Control Plane Agents", version: "1", chainId}; RevokeMandate(string mandateId, bytes32 nonce, uint256 deadline). Single use. Operators use `npm run cli -- mandate:revoke <id>`.',
  })
  @ApiOkResponse({ type: MandateDto })
  @ApiBadRequestResponse({ description: 'invalid_request with details.reason: bad_signature, expired, nonce_used', type: ErrorBody })
  @ApiConflictResponse({ description: 'invalid_request: already revoked (details.status, details.allowed)', type: ErrorBody })
  @ApiStandardErrors({ notFound: true })
  revoke(@Param('id', mandateId) id: string, @Body() body: RevokeMandateDto): Promise<MandateDto> {
    return this.mandates.revokeBySig(id, body);
  }
}
