import { Injectable } from '@nestjs/common';
import { requireUuid } from '../../common/http/path-id';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { CreateInvoiceDto, UpdateInvoiceDto } from './dto/invoice.dto';
import { InvoicesService } from './invoices.service';

/** `create-invoice` (POST /invoices, svc_invoice_create; docs/api.md invoices): a draft invoice. invoices:write; Idempotency-Key optional. */
export const CREATE_INVOICE: OperationSpec<CreateInvoiceDto> = { name: 'create-invoice', scopes: ['invoices:write'], input: CreateInvoiceDto, idempotency: 'optional' };

/**
 * `send-invoice` (POST /invoices/{id}/send, svc_invoice_send): finalises a draft or re-sends an open
 * invoice. invoices:write; Idempotency-Key optional; `{id}` is the path parameter. It declares no
 * input: the REST body's DTO (`InvoiceActionDto`) holds only the body form of the key, and the
 * tool's arguments besides `id` and `idempotencyKey` are ignored, as they always were.
 */
export const SEND_INVOICE: OperationSpec = { name: 'send-invoice', scopes: ['invoices:write'], idempotency: 'optional' };

/**
 * `update-invoice` (PATCH /invoices/{id}; docs/api.md invoices, an extension): edits a draft (JSON
 * merge). invoices:write; Idempotency-Key optional; `{id}` is the path parameter.
 */
export const UPDATE_INVOICE: OperationSpec<UpdateInvoiceDto> = { name: 'update-invoice', scopes: ['invoices:write'], input: UpdateInvoiceDto, idempotency: 'optional' };

/**
 * `void-invoice` (POST /invoices/{id}/void; an extension): voids a draft or open invoice, burning its
 * unfunded checkout on chain first (the work's `prepare`, before the key's transaction, DESIGN §5).
 * invoices:write; Idempotency-Key optional; `{id}` is the path parameter; no input besides the key.
 */
export const VOID_INVOICE: OperationSpec = { name: 'void-invoice', scopes: ['invoices:write'], idempotency: 'optional' };

/**
 * The invoice operations with their work (DESIGN §17: declared once; REST states them with `@Runs`
 * and returns their work, MCP tools name them). Each work is `{run}`: the service call in the
 * key's transaction (joined by the service's own); `void-invoice` burns on chain first.
 */
@Injectable()
export class InvoicesOperations {
  readonly create: Operation<CreateInvoiceDto>;
  readonly send: Operation;
  readonly update: Operation<UpdateInvoiceDto>;
  readonly void: Operation;

  constructor(invoices: InvoicesService) {
    this.create = defineOperation(CREATE_INVOICE, (ctx, input) => ({ run: () => invoices.create(ctx.principal, input) }));
    this.send = defineOperation(SEND_INVOICE, (ctx) => {
      const id = requireUuid(ctx.params.id, 'invoice');
      return { run: () => invoices.send(ctx.principal, id) };
    });
    this.update = defineOperation(UPDATE_INVOICE, (ctx, input) => {
      const id = requireUuid(ctx.params.id, 'invoice');
      return { run: () => invoices.update(ctx.principal, id, input) };
    });
    this.void = defineOperation(VOID_INVOICE, (ctx) => {
      const id = requireUuid(ctx.params.id, 'invoice');
      return { prepare: () => invoices.voidOnChain(ctx.principal, id), run: () => invoices.void(ctx.principal, id) };
    });
  }
}
