import { OrgsService } from '../../modules/orgs/orgs.service';
import { requireOption } from '../args';
import { inTransaction } from '../command';
import type { CommandDeclaration } from '../command';

/** The `oauth:client:revoke` operator command (docs/operations.md; usage in `summary`). */
export const oauthClientRevokeCommand: CommandDeclaration = {
  name: 'oauth:client:revoke',
  summary: 'oauth:client:revoke --client bac_…   (no new tokens; its access tokens answer 401 at once)',
  run: async (app, values) => {
    const revoked = await inTransaction(app, () => app.get(OrgsService).revokeOAuthClient(requireOption(values, 'client')));
    return { clientId: revoked.clientId, revokedAt: revoked.revokedAt.toISOString() };
  },
  options: {
  client: { type: 'string' },
  },
  secrets: [],
};
