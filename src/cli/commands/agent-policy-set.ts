import { AgentsService, PolicyInput } from '../../modules/agents/agents.service';
import { listOption, requireOption, UsageError } from '../args';
import type { CommandDeclaration } from '../command';

/** The `agent:policy:set` operator command (docs/operations.md; usage in `summary`). */
export const agentPolicySetCommand: CommandDeclaration = {
  name: 'agent:policy:set',
  summary:
    'agent:policy:set --agent ID [--per-transaction-max A] [--daily-limit A] [--monthly-limit A] [--approval-threshold A] ' +
    '[--allowed-recipients a,b] [--mode autonomous|mandate] [--valid-from ISO] [--expires-at ISO]   (sets the whole policy; absent flags are unset)',
  run: async (app, values) => {
    const opt = (name: string) => {
      const v = values[name];
      if (v === true) throw new UsageError(`--${name} needs a value`);
      return typeof v === 'string' ? v : undefined;
    };
    const input: PolicyInput = {
      perTransactionMax: opt('per-transaction-max'),
      dailyLimit: opt('daily-limit'),
      monthlyLimit: opt('monthly-limit'),
      approvalThreshold: opt('approval-threshold'),
      allowedRecipients: opt('allowed-recipients') === undefined ? undefined : listOption(values, 'allowed-recipients'),
      mode: opt('mode'),
      validFrom: opt('valid-from'),
      expiresAt: opt('expires-at'),
    };
    return { ...(await app.get(AgentsService).setPolicy(requireOption(values, 'agent'), input)) };
  },
  options: {
  agent: { type: 'string' },
  'per-transaction-max': { type: 'string' },
  'daily-limit': { type: 'string' },
  'monthly-limit': { type: 'string' },
  'approval-threshold': { type: 'string' },
  'allowed-recipients': { type: 'string' },
  mode: { type: 'string' },
  'valid-from': { type: 'string' },
  'expires-at': { type: 'string' },
  },
  secrets: [],
};
