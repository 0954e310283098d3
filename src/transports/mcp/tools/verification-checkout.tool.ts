import { IdempotentSteps } from '../../../kernel/idempotency/idempotent.decorator';
import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { VerificationService } from '../../../modules/verification/verification.service';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { idempotencyKey } from './ids';

/** svc_verification_checkout: POST /api/v1/verification/checkout. */
@Injectable()
export class VerificationCheckoutTool implements ServiceTool {
  readonly name = 'svc_verification_checkout';
  readonly title = 'Start the wallet check';
  readonly description = 'Issues the exact USDC amount to send from your payout address to payTo within 90 minutes (the open one again while it lasts).';
  readonly scopes = ['verification:write'] as const;
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly input = z.object({ idempotencyKey: idempotencyKey(false) });
  readonly idempotency = 'optional' as const;
  constructor(private readonly verification: VerificationService) {}
  readonly steps = true;
  /** As its REST twin: the chain head first, then the locked write. */
  run(ctx: McpToolContext) {
    const org = ctx.principal.organizationId;
    return Promise.resolve(
      new IdempotentSteps(
        (prepared: Awaited<ReturnType<VerificationService['walletCheckHead']>>) => this.verification.issueWalletCheck(org, prepared),
        () => this.verification.walletCheckHead(org),
      ),
    );
  }
}
