import { Injectable } from '@nestjs/common';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { CreateMandateDto } from './dto/mandate.dto';
import { MandatesService } from './mandates.service';

/**
 * `create-mandate` (POST /mandates; docs/architecture.md §14, DESIGN §17): stores an AP2 intent
 * mandate signed by the agent's owner wallet. Agent keys with agent:mandate; Idempotency-Key
 * optional (the same key replays the first answer).
 */
export const CREATE_MANDATE: OperationSpec<CreateMandateDto> = { name: 'create-mandate', scopes: ['agent:mandate'], kinds: ['agent'], input: CreateMandateDto, idempotency: 'optional' };

/** The mandates module's operations with their work (DESIGN §17: declared once; REST states them with `@Runs`). Each work is `{run}`, in the key's transaction. */
@Injectable()
export class MandatesOperations {
  readonly create: Operation<CreateMandateDto>;

  constructor(mandates: MandatesService) {
    this.create = defineOperation(CREATE_MANDATE, (ctx, input) => ({ run: () => mandates.create(ctx.principal, input) }));
  }
}
