import { Injectable } from '@nestjs/common';
import { requireUuid } from '../../common/http/path-id';
import type { AnyIdempotentWork } from '../../kernel/idempotency/idempotency.service';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { ConfirmedEscrowActionDto, EscrowActionDto, EscrowListQueryDto } from './dto/escrow.dto';
import { type EscrowActionInput, EscrowService } from './escrow.service';
import { ESCROW_ACTIONS, type EscrowApiAction } from './escrow.state';

/** `get-escrow` (GET /escrows/{id}, svc_escrow_get; also the escrow beside a checkout in svc_get_payment_status): a read. escrow:read; no key. */
export const GET_ESCROW: OperationSpec = { name: 'get-escrow', scopes: ['escrow:read'], idempotency: 'none' };

/** `list-escrows` (GET /escrows, svc_escrow_list): newest first, by role and status. escrow:read; no key. */
export const LIST_ESCROWS: OperationSpec<EscrowListQueryDto> = { name: 'list-escrows', scopes: ['escrow:read'], input: EscrowListQueryDto, idempotency: 'none' };

/** The declaration of a party action from its rule in {@link ESCROW_ACTIONS}: confirm ⇒ the confirmed DTO, idempotencyRequired ⇒ `required`. */
function actionOperation(name: string, action: EscrowApiAction): OperationSpec<EscrowActionInput> {
  const rule = ESCROW_ACTIONS[action];
  return {
    name,
    scopes: ['escrow:write'],
    input: rule.confirm ? ConfirmedEscrowActionDto : EscrowActionDto,
    idempotency: rule.idempotencyRequired ? 'required' : 'optional',
  };
}

/**
 * The escrow party actions (POST /escrows/{id}/accept|decline|mark-delivered|release|cancel|dispute
 * and the tools svc_escrow_<action>; docs/api.md Escrow action rules, docs/architecture.md §7,
 * DESIGN §17): the party sends the contract call first and reports its txHash, verified on chain
 * before the key's transaction applies it. escrow:write; `{id}` is the path parameter; release and
 * dispute take the confirmed body (`confirm: true`); decline, release, cancel and dispute require
 * an Idempotency-Key.
 */
export const ACT_ON_ESCROW: Record<EscrowApiAction, OperationSpec<EscrowActionInput>> = {
  accept: actionOperation('accept-escrow', 'accept'),
  decline: actionOperation('decline-escrow', 'decline'),
  'mark-delivered': actionOperation('mark-escrow-delivered', 'mark-delivered'),
  release: actionOperation('release-escrow', 'release'),
  cancel: actionOperation('cancel-escrow', 'cancel'),
  dispute: actionOperation('dispute-escrow', 'dispute'),
};

/**
 * The escrow module's operations with their work (DESIGN §17: declared once; REST states them with
 * `@Runs`, MCP tools name them). The work is {@link EscrowService.actionWork} on the path
 * parameter `id`, which must be a UUID (404 not_found otherwise, as REST's pipe answers).
 */
@Injectable()
export class EscrowOperations {
  readonly act: Record<EscrowApiAction, Operation<EscrowActionInput>>;

  constructor(escrows: EscrowService) {
    const act = (action: EscrowApiAction) =>
      defineOperation(ACT_ON_ESCROW[action], (ctx, input) => escrows.actionWork(ctx.principal, requireUuid(ctx.params.id, 'escrow'), action, input) as AnyIdempotentWork);
    this.act = {
      accept: act('accept'),
      decline: act('decline'),
      'mark-delivered': act('mark-delivered'),
      release: act('release'),
      cancel: act('cancel'),
      dispute: act('dispute'),
    };
  }
}
