import { AgentsService } from '../../modules/agents/agents.service';
import { requireOption } from '../args';
import type { CommandDeclaration } from '../command';

/** The `agent:signer:enable` operator command (docs/operations.md; usage in `summary`). */
export const agentSignerEnableCommand: CommandDeclaration = {
  name: 'agent:signer:enable',
  summary: 'agent:signer:enable --agent ID',
  run: async (app, values) => ({ ...(await app.get(AgentsService).setSignerEnabled(requireOption(values, 'agent'), true)) }),
  options: {
  agent: { type: 'string' },
  },
  secrets: ['SIGNER_ENCRYPTION_KEY'],
};
