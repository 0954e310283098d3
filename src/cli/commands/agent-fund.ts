import { AppConfig } from '../../config/app-config';
import { AgentsService } from '../../modules/agents/agents.service';
import { anvilKey } from '@lib/chain';
import { Wallet } from 'ethers';
import { requireOption, UsageError } from '../args';
import type { CommandDeclaration } from '../command';

/** The `agent:fund` operator command (docs/operations.md; usage in `summary`). */
export const agentFundCommand: CommandDeclaration = {
  name: 'agent:fund',
  summary: 'agent:fund --agent ID --amount 200.00   (local chain: the demo owner wallet tops up the session signer)',
  run: async (app, values) => {
    if (app.get(AppConfig).env.CHAIN_ID !== 31337) throw new UsageError('agent:fund is for the local chain; the owner tops up the signer with a plain USDC transfer');
    const owner = new Wallet(process.env.DEMO_OWNER_PRIVATE_KEY || anvilKey('demoBuyer'));
    const result = await app.get(AgentsService).fund(requireOption(values, 'agent'), requireOption(values, 'amount'), owner);
    return { ...result, owner: owner.address };
  },
  options: {
  agent: { type: 'string' },
  amount: { type: 'string' },
  },
  secrets: ['SIGNER_ENCRYPTION_KEY', 'RELAYER_PRIVATE_KEY'],
};
