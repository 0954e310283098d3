import { Injectable } from '@nestjs/common';
import type { Operation } from '../../../kernel/operation';
import { type CreateOfferingDto, OfferingListQueryDto, type UpdateOfferingDto } from '../../../modules/offerings/dto/offering.dto';
import { GET_OFFERING, LIST_OFFERINGS, OfferingsOperations } from '../../../modules/offerings/offerings.operations';
import { OfferingsService } from '../../../modules/offerings/offerings.service';
import type { McpTool, McpToolContext, ServiceTool } from '../mcp-tool';
import { idParams, requireUuid } from './ids';

/** svc_offering_create: the operation `create-offering` of POST /api/v1/offerings (declared once in offerings.operations.ts). */
@Injectable()
export class OfferingCreateTool implements McpTool<CreateOfferingDto> {
  readonly name = 'svc_offering_create';
  readonly title = 'Create an offering';
  readonly description = 'A catalogue item with a USDC price; checkouts can sell it by offeringId and quantity.';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly operation: Operation<CreateOfferingDto>;
  constructor(ops: OfferingsOperations) {
    this.operation = ops.create;
  }
}

/** svc_offering_get: GET /api/v1/offerings/{id}. */
@Injectable()
export class OfferingGetTool implements ServiceTool<{ id: string }> {
  readonly name = 'svc_offering_get';
  readonly title = 'Get an offering';
  readonly description = 'One offering of your catalogue.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = GET_OFFERING;
  readonly params = idParams('offering');
  constructor(private readonly offerings: OfferingsService) {}
  run(ctx: McpToolContext, input: { id: string }) {
    return this.offerings.get(ctx.principal, requireUuid(input.id, 'offering'));
  }
}

/** svc_offering_list: GET /api/v1/offerings. */
@Injectable()
export class OfferingListTool implements ServiceTool<OfferingListQueryDto & Record<string, unknown>> {
  readonly name = 'svc_offering_list';
  readonly title = 'List offerings';
  readonly description = 'Your catalogue, newest first; active filters active (true) or archived (false).';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = LIST_OFFERINGS;
  constructor(private readonly offerings: OfferingsService) {}
  run(ctx: McpToolContext, q: OfferingListQueryDto) {
    return this.offerings.list(ctx.principal, { limit: q.limit, startingAfter: q.starting_after, active: q.active });
  }
}

/** svc_offering_update: the operation `update-offering` of PATCH /api/v1/offerings/{id}, a JSON merge where null clears and absent keeps (declared once in offerings.operations.ts). */
@Injectable()
export class OfferingUpdateTool implements McpTool<UpdateOfferingDto> {
  readonly name = 'svc_offering_update';
  readonly title = 'Update an offering';
  readonly description = 'Changes the fields given (null clears description or metadata; active: false archives). Binds later checkouts only.';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly params = idParams('offering');
  readonly operation: Operation<UpdateOfferingDto>;
  constructor(ops: OfferingsOperations) {
    this.operation = ops.update;
  }
}
