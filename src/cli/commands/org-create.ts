import { OrgsService } from '../../modules/orgs/orgs.service';
import { requireOption } from '../args';
import { inTransaction } from '../command';
import type { CommandDeclaration } from '../command';

/** The `org:create` operator command (docs/operations.md; usage in `summary`). */
export const orgCreateCommand: CommandDeclaration = {
  name: 'org:create',
  summary: 'org:create --name N --handle H [--payout-address 0x…]',
  run: async (app, values) => {
    const org = await inTransaction(app, () =>
      app.get(OrgsService).createOrganization({
        name: requireOption(values, 'name'),
        handle: requireOption(values, 'handle'),
        payoutAddress: typeof values['payout-address'] === 'string' ? values['payout-address'] : undefined,
      }),
    );
    return { id: org.id, handle: org.handle, payoutAddress: org.payoutAddress };
  },
  options: {
  name: { type: 'string' },
  handle: { type: 'string' },
  'payout-address': { type: 'string' },
  },
  secrets: [],
};
