import { Body, Controller, Get, HttpCode, Module, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, RequireAgentKey } from '../../common/auth/auth.decorators';
import type { Principal } from '../../common/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { Idempotent } from '../../common/idempotency/idempotent.decorator';
import { CreateMandateDto, MandateDto, MandateListDto, MandateListQueryDto } from './dto/mandate.dto';
import { MandatesModule } from './mandates.module';
import { MandatesService } from './mandates.service';

const mandateId = new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound('mandate') });

/** AP2 intent mandates of the calling agent (docs/architecture.md §14, docs/api.md "Mandates"). */
@ApiTags('agents')
@Controller('api/v1/mandates')
export class MandatesController {
  constructor(private readonly mandates: MandatesService) {}

  @Post()
  @HttpCode(200)
  @RequireAgentKey('agent:mandate')
  @Idempotent({ required: false })
  @ApiOperation({
    summary: "Store an intent mandate signed by the agent's owner (AP2 v0.1 EIP-712 profile or v0.2 SD-JWT ES256K)",
    description:
      'In policy mode "mandate" every spend needs an active mandate covering payee and amount (403 mandate_required otherwise). ' +
      '400 details.reason: expired, unsupported_format, bad_signature, wrong_signer, terms_mismatch, wrong_chain, malformed, nonce_used.',
  })
  @ApiOkResponse({ type: MandateDto })
  @ApiStandardErrors()
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateMandateDto): Promise<MandateDto> {
    return this.mandates.create(p, body);
  }

  @Get()
  @RequireAgentKey('agent:mandate')
  @ApiOperation({ summary: "The agent's mandates with usedAmount and status, newest first" })
  @ApiOkResponse({ type: MandateListDto })
  @ApiStandardErrors()
  list(@CurrentPrincipal() p: Principal, @Query() q: MandateListQueryDto) {
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
}

/** The mandates routes (api only). */
@Module({ imports: [MandatesModule], controllers: [MandatesController] })
export class MandatesHttpModule {}
