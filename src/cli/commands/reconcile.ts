import { ReconciliationService } from '../../chain/reconciliation/reconciliation.service';
import type { CommandDeclaration } from '../command';

/** The `reconcile` operator command (docs/operations.md; usage in `summary`). */
export const reconcileCommand: CommandDeclaration = {
  name: 'reconcile',
  summary: 'reconcile   (one reconciliation pass of the ledger against the chain now; reports, never fixes; DESIGN §18)',
  run: async (app) => {
    const report = await app.get(ReconciliationService).run();
    return { ...report };
  },
  options: {
  },
  secrets: [],
};
