import { OrgsService } from '../../modules/orgs/orgs.service';
import { listOption, requireOption, UsageError } from '../args';
import { inTransaction } from '../command';
import type { CommandDeclaration } from '../command';

/** The `key:create` operator command (docs/operations.md; usage in `summary`). */
export const keyCreateCommand: CommandDeclaration = {
  name: 'key:create',
  summary: 'key:create --org ID --type merchant|agent [--agent ID] --scopes a,b',
  run: async (app, values) => {
    const type = requireOption(values, 'type');
    if (type !== 'merchant' && type !== 'agent') throw new UsageError('--type must be merchant or agent');
    const { key, secret } = await inTransaction(app, () =>
      app.get(OrgsService).createApiKey({
        organizationId: requireOption(values, 'org'),
        kind: type,
        agentId: type === 'agent' ? requireOption(values, 'agent') : undefined,
        scopes: listOption(values, 'scopes'),
      }),
    );
    return { id: key.id, key: secret, scopes: key.scopes };
  },
  options: {
  org: { type: 'string' },
  type: { type: 'string' },
  agent: { type: 'string' },
  scopes: { type: 'string' },
  },
  secrets: [],
};
