import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { parseAmount } from '@lib/money';
import { AppConfig } from '../../config/app-config';
import { Public } from '../../kernel/auth/auth.decorators';
import { AppError } from '../../common/errors/app-error';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { FeeQuoteDto, FeeQuoteQueryDto } from './fees.dto';
import { FeesService } from './fees.service';

@ApiTags('fees')
@Controller('api/v1/fees')
export class FeesController {
  constructor(
    private readonly fees: FeesService,
    private readonly config: AppConfig,
  ) {}

  @Get('quote')
  @Public()
  @ApiOperation({ summary: 'Fee quote for an amount (users pay 0 %)' })
  @ApiOkResponse({ type: FeeQuoteDto })
  @ApiStandardErrors()
  quote(@Query() q: FeeQuoteQueryDto): FeeQuoteDto {
    let units: bigint;
    try {
      units = parseAmount(q.amount, this.config.maxAmountUnits);
    } catch (err) {
      throw AppError.invalidParam('amount', (err as Error).message);
    }
    return this.fees.quote(q.source ?? 'checkout', units);
  }
}
