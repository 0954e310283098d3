import { AgentsService } from '../../modules/agents/agents.service';
import { requireOption } from '../args';
import type { CommandDeclaration } from '../command';

/** The `agent:pause` operator command (docs/operations.md; usage in `summary`). */
export const agentPauseCommand: CommandDeclaration = {
  name: 'agent:pause',
  summary: 'agent:pause --agent ID   (every spend answers 403 agent_paused; reads still work)',
  run: async (app, values) => ({ ...(await app.get(AgentsService).setPaused(requireOption(values, 'agent'), true)) }),
  options: {
  agent: { type: 'string' },
  },
  secrets: [],
};
