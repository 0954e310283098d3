import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { Runs } from '../../kernel/http';
import { CreateOfferingDto, OfferingDto, OfferingListDto, OfferingListQueryDto, UpdateOfferingDto } from './dto/offering.dto';
import { CREATE_OFFERING, GET_OFFERING, LIST_OFFERINGS, OfferingsOperations, UPDATE_OFFERING } from './offerings.operations';
import { OfferingsService } from './offerings.service';

const offeringId = new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound('offering') });

/** docs/api.md offerings endpoints; the rules are in {@link OfferingsService}. */
@ApiTags('offerings')
@Controller('api/v1/offerings')
export class OfferingsController {
  constructor(
    private readonly offerings: OfferingsService,
    private readonly ops: OfferingsOperations,
  ) {}

  @Post()
  @HttpCode(200)
  @Runs(CREATE_OFFERING)
  @ApiOperation({ summary: 'Create an offering (a catalogue item with a unit price in USDC)' })
  @ApiOkResponse({ type: OfferingDto })
  @ApiStandardErrors()
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateOfferingDto) {
    return this.ops.create.work({ principal: p, params: {} }, body);
  }

  @Get()
  @Runs(LIST_OFFERINGS)
  @ApiOperation({ summary: 'List offerings, newest first; filter by active' })
  @ApiOkResponse({ type: OfferingListDto })
  @ApiStandardErrors()
  list(@CurrentPrincipal() p: Principal, @Query() q: OfferingListQueryDto): Promise<OfferingListDto> {
    return this.offerings.list(p, { limit: q.limit, startingAfter: q.starting_after, active: q.active });
  }

  @Get(':id')
  @Runs(GET_OFFERING)
  @ApiOperation({ summary: 'Retrieve an offering' })
  @ApiOkResponse({ type: OfferingDto })
  @ApiStandardErrors({ notFound: true })
  get(@CurrentPrincipal() p: Principal, @Param('id', offeringId) id: string): Promise<OfferingDto> {
    return this.offerings.get(p, id);
  }

  @Patch(':id')
  @HttpCode(200)
  @Runs(UPDATE_OFFERING)
  @ApiOperation({
    summary: 'Update an offering (JSON merge: absent keeps, null clears description/metadata)',
    description: 'Changes bind later checkouts only. Archive with {"active": false}; there is no delete.',
  })
  @ApiOkResponse({ type: OfferingDto })
  @ApiStandardErrors({ notFound: true })
  update(@CurrentPrincipal() p: Principal, @Param('id', offeringId) id: string, @Body() body: UpdateOfferingDto) {
    return this.ops.update.work({ principal: p, params: { id } }, body);
  }
}
