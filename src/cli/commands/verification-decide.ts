import { OPERATOR_DECISIONS, OperatorDecision } from '../../modules/verification/verification.state';
import { VerificationService } from '../../modules/verification/verification.service';
import { requireOption, UsageError } from '../args';
import type { CommandDeclaration } from '../command';

/** The `verification:decide` operator command (docs/operations.md; usage in `summary`). */
export const verificationDecideCommand: CommandDeclaration = {
  name: 'verification:decide',
  summary: 'verification:decide --org ID --identity approved|declined|reopen   (operator decision on the identity check)',
  run: async (app, values) => {
    const organizationId = requireOption(values, 'org');
    const decision = requireOption(values, 'identity');
    if (!(OPERATOR_DECISIONS as readonly string[]).includes(decision)) throw new UsageError(`--identity must be one of ${OPERATOR_DECISIONS.join(', ')}`);
    const verification = await app.get(VerificationService).decide(organizationId, decision as OperatorDecision);
    return { organizationId, ...verification };
  },
  options: {
  org: { type: 'string' },
  identity: { type: 'string' },
  },
  secrets: [],
};
