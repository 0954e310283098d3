import { Injectable } from '@nestjs/common';
import { requireUuid } from '../../common/http/path-id';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { CreateOfferingDto, UpdateOfferingDto, OfferingListQueryDto } from './dto/offering.dto';
import { OfferingsService } from './offerings.service';

/** `get-offering` (GET /offerings/{id}, svc_offering_get): a read. offerings:read; no key. */
export const GET_OFFERING: OperationSpec = { name: 'get-offering', scopes: ['offerings:read'], idempotency: 'none' };

/** `list-offerings` (GET /offerings, svc_offering_list): newest first, by active. offerings:read; no key. */
export const LIST_OFFERINGS: OperationSpec<OfferingListQueryDto> = { name: 'list-offerings', scopes: ['offerings:read'], input: OfferingListQueryDto, idempotency: 'none' };

/** `create-offering` (POST /offerings, svc_offering_create; docs/architecture.md §11): a catalogue item. offerings:write; Idempotency-Key optional. */
export const CREATE_OFFERING: OperationSpec<CreateOfferingDto> = { name: 'create-offering', scopes: ['offerings:write'], input: CreateOfferingDto, idempotency: 'optional' };

/** `update-offering` (PATCH /offerings/{id}, svc_offering_update): JSON merge of the fields given. offerings:write; Idempotency-Key optional; `{id}` is the path parameter. */
export const UPDATE_OFFERING: OperationSpec<UpdateOfferingDto> = { name: 'update-offering', scopes: ['offerings:write'], input: UpdateOfferingDto, idempotency: 'optional' };

/**
 * The offering operations with their work (DESIGN §17: declared once; REST states them with
 * `@Runs` and returns their work, MCP tools name them). Each work is `{run}`: the service call in
 * the key's transaction.
 */
@Injectable()
export class OfferingsOperations {
  readonly create: Operation<CreateOfferingDto>;
  readonly update: Operation<UpdateOfferingDto>;

  constructor(offerings: OfferingsService) {
    this.create = defineOperation(CREATE_OFFERING, (ctx, input) => ({ run: () => offerings.create(ctx.principal, input) }));
    this.update = defineOperation(UPDATE_OFFERING, (ctx, input) => {
      const id = requireUuid(ctx.params.id, 'offering');
      return { run: () => offerings.update(ctx.principal, id, input) };
    });
  }
}
