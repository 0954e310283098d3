import { OrgsService } from '../../modules/orgs/orgs.service';
import { listOption, requireOption } from '../args';
import { inTransaction } from '../command';
import type { CommandDeclaration } from '../command';

/** The `oauth:client:create` operator command (docs/operations.md; usage in `summary`). */
export const oauthClientCreateCommand: CommandDeclaration = {
  name: 'oauth:client:create',
  summary: 'oauth:client:create --org ID --scopes a,b',
  run: async (app, values) => {
    const { client, clientSecret } = await inTransaction(app, () =>
      app.get(OrgsService).createOAuthClient({ organizationId: requireOption(values, 'org'), scopes: listOption(values, 'scopes') }),
    );
    return { clientId: client.clientId, clientSecret, scopes: client.scopes };
  },
  options: {
  org: { type: 'string' },
  scopes: { type: 'string' },
  },
  secrets: [],
};
