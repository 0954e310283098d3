import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { CreateInvoiceDto, InvoiceListQueryDto } from '../../../modules/invoices/dto/invoice.dto';
const INVOICE_STATUSES = ['draft', 'open', 'paid', 'void'] as const;
import { InvoicesService } from '../../../modules/invoices/invoices.service';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { idempotencyKey, idParam, listShape, requireUuid } from './ids';

/** svc_invoice_create: POST /api/v1/invoices (a draft). */
@Injectable()
export class InvoiceCreateTool implements ServiceTool {
  readonly name = 'svc_invoice_create';
  readonly title = 'Create an invoice (draft)';
  readonly description = 'A draft invoice with line items priced from offerings or given; send it with svc_invoice_send.';
  readonly scopes = ['invoices:write'] as const;
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly input = z.object({
    customer: z.object({ name: z.string(), email: z.string() }),
    lineItems: z.array(
      z.object({ offeringId: z.string().optional(), description: z.string().optional(), quantity: z.number().int().optional(), unitAmount: z.string().optional() }),
    ),
    dueAt: z.string().nullable().optional(),
    memo: z.string().nullable().optional(),
    metadata: z.record(z.string(), z.unknown()).nullable().optional(),
    idempotencyKey: idempotencyKey(false),
  });
  readonly dto = CreateInvoiceDto;
  readonly idempotency = 'optional' as const;
  constructor(private readonly invoices: InvoicesService) {}
  run(ctx: McpToolContext, input: Record<string, unknown>) {
    return this.invoices.create(ctx.principal, input as unknown as CreateInvoiceDto);
  }
}

/** svc_invoice_get: GET /api/v1/invoices/{id}. */
@Injectable()
export class InvoiceGetTool implements ServiceTool<{ id: string }> {
  readonly name = 'svc_invoice_get';
  readonly title = 'Get an invoice';
  readonly description = 'One invoice with its status, number, payUrl and checkout.';
  readonly scopes = ['invoices:read'] as const;
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly input = z.object({ id: idParam('invoice') });
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
  readonly scopes = ['invoices:read'] as const;
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly input = z.object({ ...listShape, status: z.enum(INVOICE_STATUSES).optional() });
  readonly dto = InvoiceListQueryDto;
  constructor(private readonly invoices: InvoicesService) {}
  run(ctx: McpToolContext, q: InvoiceListQueryDto) {
    return this.invoices.list(ctx.principal, { limit: q.limit, startingAfter: q.starting_after, status: q.status });
  }
}

/** svc_invoice_send: POST /api/v1/invoices/{id}/send (finalises a draft, or re-sends). */
@Injectable()
export class InvoiceSendTool implements ServiceTool<{ id: string }> {
  readonly name = 'svc_invoice_send';
  readonly title = 'Send an invoice';
  readonly description = 'Finalises a draft (number, payUrl) and emails the customer, or re-sends an open invoice.';
  readonly scopes = ['invoices:write'] as const;
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly input = z.object({ id: idParam('invoice'), idempotencyKey: idempotencyKey(false) });
  readonly idempotency = 'optional' as const;
  constructor(private readonly invoices: InvoicesService) {}
  run(ctx: McpToolContext, input: { id: string }) {
    return this.invoices.send(ctx.principal, requireUuid(input.id, 'invoice'));
  }
}
