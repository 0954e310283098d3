import { Injectable } from '@nestjs/common';
import type { AnyIdempotentWork } from '../../kernel/idempotency/idempotency.service';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { CheckoutService } from './checkout.service';
import { CreateCheckoutSessionDto } from './dto/create-checkout-session.dto';
import { ListQueryDto } from '../../common/http/list.dto';

/** `get-checkout` (GET /checkout-sessions/{id}, svc_checkout_get): a read (DESIGN §17). checkout:read; no key; `{id}` is the path parameter. */
export const GET_CHECKOUT: OperationSpec = { name: 'get-checkout', scopes: ['checkout:read'], idempotency: 'none' };

/** `list-checkouts` (GET /checkout-sessions, svc_checkout_list): newest first. checkout:read; no key. */
export const LIST_CHECKOUTS: OperationSpec<ListQueryDto> = { name: 'list-checkouts', scopes: ['checkout:read'], input: ListQueryDto, idempotency: 'none' };

/**
 * `create-checkout` (POST /checkout-sessions, svc_checkout_create and its alias svc_create_checkout,
 * the A2A skill `create-checkout`; docs/api.md, DESIGN §17): an escrow-settled checkout session.
 * checkout:write; Idempotency-Key optional. Its work is {@link CheckoutService.createWork}: the
 * `webhookUrl` DNS check (when one is needed) before the key's transaction, then the insert.
 */
export const CREATE_CHECKOUT: OperationSpec<CreateCheckoutSessionDto> = {
  name: 'create-checkout',
  scopes: ['checkout:write'],
  input: CreateCheckoutSessionDto,
  idempotency: 'optional',
};

/**
 * The checkout module's operations with their work (DESIGN §17: declared once; REST states them
 * with `@Runs`, MCP tools and A2A skills name them and run them through the kernel's runner).
 */
@Injectable()
export class CheckoutOperations {
  readonly create: Operation<CreateCheckoutSessionDto>;

  constructor(checkout: CheckoutService) {
    this.create = defineOperation(CREATE_CHECKOUT, (ctx, input) => checkout.createWork(ctx.principal, input) as Promise<AnyIdempotentWork>);
  }
}
