import { EscrowService } from '../../modules/escrow/escrow.service';
import { requireOption, UsageError } from '../args';
import type { CommandDeclaration } from '../command';

/** The `escrow:resolve` operator command (docs/operations.md; usage in `summary`). */
export const escrowResolveCommand: CommandDeclaration = {
  name: 'escrow:resolve',
  summary: 'escrow:resolve <escrowId> --to buyer|seller   (arbiter only; not public API)',
  run: async (app, values, positionals) => {
    const escrowId = positionals[0];
    const to = requireOption(values, 'to');
    if (!escrowId) throw new UsageError('escrow:resolve needs an escrow id');
    if (to !== 'buyer' && to !== 'seller') throw new UsageError('--to must be buyer or seller');
    return app.get(EscrowService).resolveDispute(escrowId, to);
  },
  options: {
  to: { type: 'string' },
  },
  secrets: ['ARBITER_PRIVATE_KEY'],
};
