import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import { ApiConflictResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, RequireScopes } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ErrorBody } from '../../common/errors/error-body';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { CreateInvoiceDto, InvoiceActionDto, InvoiceDto, InvoiceListDto, InvoiceListQueryDto, UpdateInvoiceDto } from './dto/invoice.dto';
import { Runs } from '../../kernel/http';
import { CREATE_INVOICE, InvoicesOperations, SEND_INVOICE, UPDATE_INVOICE, VOID_INVOICE } from './invoices.operations';
import { InvoicesService } from './invoices.service';

const invoiceId = new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound('invoice') });
const STATE_CONFLICT = 'invalid_request: the invoice\'s status forbids this (details.status, details.allowed), or it has a funded checkout (details.reason checkout_funded)';

/** docs/api.md invoices endpoints (+ PATCH and void, extensions); the rules are in {@link InvoicesService}. */
@ApiTags('invoices')
@Controller('api/v1/invoices')
export class InvoicesController {
  constructor(
    private readonly invoices: InvoicesService,
    private readonly ops: InvoicesOperations,
  ) {}

  @Post()
  @HttpCode(200)
  @Runs(CREATE_INVOICE)
  @ApiOperation({ summary: 'Create a draft invoice', description: 'Lines from offerings take their current price; totals are Σ quantity × unitAmount in USDC.' })
  @ApiOkResponse({ type: InvoiceDto })
  @ApiStandardErrors()
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateInvoiceDto) {
    return this.ops.create.work({ principal: p, params: {} }, body);
  }

  @Get()
  @RequireScopes('invoices:read')
  @ApiOperation({ summary: 'List invoices, newest first; filter by status' })
  @ApiOkResponse({ type: InvoiceListDto })
  @ApiStandardErrors()
  list(@CurrentPrincipal() p: Principal, @Query() q: InvoiceListQueryDto): Promise<InvoiceListDto> {
    return this.invoices.list(p, { limit: q.limit, startingAfter: q.starting_after, status: q.status });
  }

  @Get(':id')
  @RequireScopes('invoices:read')
  @ApiOperation({ summary: 'Retrieve an invoice' })
  @ApiOkResponse({ type: InvoiceDto })
  @ApiStandardErrors({ notFound: true })
  get(@CurrentPrincipal() p: Principal, @Param('id', invoiceId) id: string): Promise<InvoiceDto> {
    return this.invoices.get(p, id);
  }

  @Patch(':id')
  @HttpCode(200)
  @Runs(UPDATE_INVOICE)
  @ApiOperation({ summary: 'Edit a draft invoice (JSON merge: absent keeps, null clears dueAt/memo/metadata; lineItems replaces all lines)' })
  @ApiOkResponse({ type: InvoiceDto })
  @ApiStandardErrors({ notFound: true })
  @ApiConflictResponse({ description: STATE_CONFLICT, type: ErrorBody })
  update(@CurrentPrincipal() p: Principal, @Param('id', invoiceId) id: string, @Body() body: UpdateInvoiceDto) {
    return this.ops.update.work({ principal: p, params: { id } }, body);
  }

  @Post(':id/send')
  @HttpCode(200)
  @Runs(SEND_INVOICE)
  @ApiOperation({
    summary: 'Send an invoice: finalise a draft (number, payUrl, sentAt) or re-send an open one',
    description: 'Emails the customer when SMTP is configured (email.status pending → sent); without SMTP_URL the invoice is still sent and email.status is skipped.',
  })
  @ApiOkResponse({ type: InvoiceDto })
  @ApiStandardErrors({ notFound: true })
  @ApiConflictResponse({ description: STATE_CONFLICT, type: ErrorBody })
  send(@CurrentPrincipal() p: Principal, @Param('id', invoiceId) id: string, @Body() _body: InvoiceActionDto) {
    return this.ops.send.work({ principal: p, params: { id } }, {});
  }

  @Post(':id/void')
  @HttpCode(200)
  @Runs(VOID_INVOICE)
  @ApiOperation({ summary: 'Void a draft or open invoice (refused while a checkout of it is funded); burns its unfunded checkout on chain first' })
  @ApiOkResponse({ type: InvoiceDto })
  @ApiStandardErrors({ notFound: true })
  @ApiConflictResponse({ description: STATE_CONFLICT, type: ErrorBody })
  void(@CurrentPrincipal() p: Principal, @Param('id', invoiceId) id: string, @Body() _body: InvoiceActionDto) {
    // The on-chain burn (the work's prepare) runs before the idempotent transaction opens (docs/architecture.md §5).
    return this.ops.void.work({ principal: p, params: { id } }, {});
  }
}
