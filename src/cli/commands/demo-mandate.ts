import { AppConfig } from '../../config/app-config';
import { AgentsService } from '../../modules/agents/agents.service';
import { signIntentMandate } from '../../modules/mandates/mandate-signing';
import { anvilKey } from '@lib/chain';
import { Wallet } from 'ethers';
import { listOption, requireOption, UsageError } from '../args';
import type { CommandDeclaration } from '../command';

/** The `demo:mandate` operator command (docs/operations.md; usage in `summary`). */
export const demoMandateCommand: CommandDeclaration = {
  name: 'demo:mandate',
  summary:
    'demo:mandate --agent ID --payees a,b --max-per-payment 20.00 --total 50.00 [--expires-at ISO] [--description D]   ' +
    '(local chain: the demo owner wallet signs an EIP-712 IntentMandate; prints the POST /api/v1/mandates body)',
  run: async (app, values) => {
    const env = app.get(AppConfig).env;
    if (env.CHAIN_ID !== 31337) throw new UsageError('demo:mandate is for the local chain; the owner signs with their own wallet elsewhere');
    const owner = new Wallet(process.env.DEMO_OWNER_PRIVATE_KEY || anvilKey('demoBuyer'));
    const agent = await app.get(AgentsService).view(requireOption(values, 'agent'));
    const description = values.description;
    const expiresAt = values['expires-at'];
    const terms = {
      payees: listOption(values, 'payees'),
      maxAmountPerPayment: requireOption(values, 'max-per-payment'),
      totalAmount: requireOption(values, 'total'),
      expiresAt: typeof expiresAt === 'string' ? new Date(expiresAt).toISOString() : new Date(Date.now() + 86_400_000).toISOString(),
      description: typeof description === 'string' ? description : 'Demo mandate',
    };
    return { ...terms, credential: await signIntentMandate(owner, env.CHAIN_ID, agent.slug, terms) };
  },
  options: {
  agent: { type: 'string' },
  payees: { type: 'string' },
  'max-per-payment': { type: 'string' },
  total: { type: 'string' },
  'expires-at': { type: 'string' },
  description: { type: 'string' },
  },
  secrets: [],
};
