import { AgentsService } from '../../modules/agents/agents.service';
import { requireOption } from '../args';
import type { CommandDeclaration } from '../command';

/** The `agent:resume` operator command (docs/operations.md; usage in `summary`). */
export const agentResumeCommand: CommandDeclaration = {
  name: 'agent:resume',
  summary: 'agent:resume --agent ID',
  run: async (app, values) => ({ ...(await app.get(AgentsService).setPaused(requireOption(values, 'agent'), false)) }),
  options: {
  agent: { type: 'string' },
  },
  secrets: [],
};
