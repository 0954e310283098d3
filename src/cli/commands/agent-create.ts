import { AgentsService } from '../../modules/agents/agents.service';
import { requireOption } from '../args';
import type { CommandDeclaration } from '../command';

/** The `agent:create` operator command (docs/operations.md; usage in `summary`). */
export const agentCreateCommand: CommandDeclaration = {
  name: 'agent:create',
  summary: 'agent:create --org ID --slug S --owner-address 0x… [--name N]   (with a sealed session signer, disabled, no USDC)',
  run: async (app, values) => {
    const agent = await app.get(AgentsService).create({
      organizationId: requireOption(values, 'org'),
      slug: requireOption(values, 'slug'),
      ownerAddress: requireOption(values, 'owner-address'),
      name: typeof values.name === 'string' ? values.name : undefined,
    });
    return { id: agent.id, slug: agent.slug };
  },
  options: {
  org: { type: 'string' },
  slug: { type: 'string' },
  'owner-address': { type: 'string' },
  name: { type: 'string' },
  },
  secrets: ['SIGNER_ENCRYPTION_KEY'],
};
