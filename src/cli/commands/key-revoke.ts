import { OrgsService } from '../../modules/orgs/orgs.service';
import { requireOption } from '../args';
import { inTransaction } from '../command';
import type { CommandDeclaration } from '../command';

/** The `key:revoke` operator command (docs/operations.md; usage in `summary`). */
export const keyRevokeCommand: CommandDeclaration = {
  name: 'key:revoke',
  summary: 'key:revoke --key ID   (the key answers 401 from the next request on)',
  run: async (app, values) => {
    const revoked = await inTransaction(app, () => app.get(OrgsService).revokeApiKey(requireOption(values, 'key')));
    return { id: revoked.id, revokedAt: revoked.revokedAt.toISOString() };
  },
  options: {
  key: { type: 'string' },
  },
  secrets: [],
};
