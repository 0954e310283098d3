import { BalanceReconciler } from '../../modules/balance/balance-reconciler.service';
import type { CommandDeclaration } from '../command';

/** The `balance:reconcile` operator command (DESIGN §21: an organisation's ledger against the chain's Transfer logs; usage in `summary`). */
export const balanceReconcileCommand: CommandDeclaration = {
  name: 'balance:reconcile',
  summary: 'balance:reconcile --org <organizationId> [--from <ISO date>] [--to <ISO date>]   (the organisation\'s balance transactions of [from, to) against the chain; default the last 30 days; reports, never fixes)',
  run: async (app, values) => {
    const organizationId = String(values.org ?? '');
    if (!organizationId) throw new Error('--org is required');
    const to = typeof values.to === 'string' ? new Date(values.to) : new Date();
    const from = typeof values.from === 'string' ? new Date(values.from) : new Date(to.getTime() - 30 * 86_400_000);
    if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) throw new Error('--from and --to must be ISO-8601 dates');
    return { ...(await app.get(BalanceReconciler).check(organizationId, from, to)) };
  },
  options: {
    org: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
  },
  secrets: [],
};
