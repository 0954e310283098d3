import { MandatesService } from '../../modules/mandates/mandates.service';
import { UsageError } from '../args';
import type { CommandDeclaration } from '../command';
import { validate as isUuid } from 'uuid';

/** The `mandate:revoke` operator command (docs/operations.md; usage in `summary`). */
export const mandateRevokeCommand: CommandDeclaration = {
  name: 'mandate:revoke',
  summary: 'mandate:revoke <mandateId>   (the mandate stops covering spends at once; docs/architecture.md §14)',
  run: async (app, values, positionals) => {
    const id = positionals[0];
    if (!id || !isUuid(id)) throw new UsageError('mandate:revoke needs a mandate id');
    const m = await app.get(MandatesService).revokeByOperator(id);
    return { id: m.id, status: m.status, revokedAt: m.revokedAt };
  },
  options: {
  },
  secrets: [],
};
