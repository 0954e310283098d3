import { Injectable } from '@nestjs/common';
import type { Operation } from '../../../kernel/operation';
import { type CreateInvoiceDto, InvoiceListQueryDto } from '../../../modules/invoices/dto/invoice.dto';
import { GET_INVOICE, InvoicesOperations, LIST_INVOICES } from '../../../modules/invoices/invoices.operations';
import { InvoicesService } from '../../../modules/invoices/invoices.service';
import type { McpTool, McpToolContext, ServiceTool } from '../mcp-tool';
import { idParams, requireUuid } from './ids';

/** svc_invoice_create: the operation `create-invoice` of POST /api/v1/invoices, a draft (declared once in invoices.operations.ts). */
@Injectable()
export class InvoiceCreateTool implements McpTool<CreateInvoiceDto> {
  readonly name = 'svc_invoice_create';
  readonly title = 'Create an invoice (draft)';
  readonly description = 'A draft invoice with line items priced from offerings or given; send it with svc_invoice_send.';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly operation: Operation<CreateInvoiceDto>;
  constructor(ops: InvoicesOperations) {
    this.operation = ops.create;
  }
}

/** svc_invoice_get: GET /api/v1/invoices/{id}. */
@Injectable()
export class InvoiceGetTool implements ServiceTool<{ id: string }> {
  readonly name = 'svc_invoice_get';
  readonly title = 'Get an invoice';
  readonly description = 'One invoice with its status, number, payUrl and checkout.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = GET_INVOICE;
  readonly params = idParams('invoice');
  constructor(private readonly invoices: InvoicesService) {}
  run(ctx: McpToolContext, input: { id: string }) {
    return this.invoices.get(ctx.principal, requireUuid(input.id, 'invoice'));
  }
}

/** svc_invoice_list: GET /api/v1/invoices. */
@Injectable()
export class InvoiceListTool implements ServiceTool<InvoiceListQueryDto & Record<string, unknown>> {
  readonly name = 'svc_invoice_list';
  readonly title = 'List invoices';
  readonly description = 'Invoices newest first, optionally by status.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = LIST_INVOICES;
  constructor(private readonly invoices: InvoicesService) {}
  run(ctx: McpToolContext, q: InvoiceListQueryDto) {
    return this.invoices.list(ctx.principal, { limit: q.limit, startingAfter: q.starting_after, status: q.status });
  }
}

/** svc_invoice_send: the operation `send-invoice` of POST /api/v1/invoices/{id}/send, which finalises a draft or re-sends (declared once in invoices.operations.ts). */
@Injectable()
export class InvoiceSendTool implements McpTool {
  readonly name = 'svc_invoice_send';
  readonly title = 'Send an invoice';
  readonly description = 'Finalises a draft (number, payUrl) and emails the customer, or re-sends an open invoice.';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly params = idParams('invoice');
  readonly operation: Operation;
  constructor(ops: InvoicesOperations) {
    this.operation = ops.send;
  }
}
