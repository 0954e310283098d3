import { AgentsService } from '../../modules/agents/agents.service';
import { requireOption } from '../args';
import type { CommandDeclaration } from '../command';

/** The `agent:signer:disable` operator command (docs/operations.md; usage in `summary`). */
export const agentSignerDisableCommand: CommandDeclaration = {
  name: 'agent:signer:disable',
  summary: 'agent:signer:disable --agent ID   (sweeps the float back to the owner)',
  run: async (app, values) => ({ ...(await app.get(AgentsService).setSignerEnabled(requireOption(values, 'agent'), false)) }),
  options: {
  agent: { type: 'string' },
  },
  secrets: ['SIGNER_ENCRYPTION_KEY', 'RELAYER_PRIVATE_KEY'],
};
