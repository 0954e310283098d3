import { IdempotentSteps } from '../../../kernel/idempotency/idempotent.decorator';
import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { VerificationService } from '../../../modules/verification/verification.service';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { idempotencyKey } from './ids';

/** svc_verification_start: POST /api/v1/verification/start. */
@Injectable()
export class VerificationStartTool implements ServiceTool {
  readonly name = 'svc_verification_start';
  readonly title = 'Start the identity check';
  readonly description = 'Opens a session with the identity provider; a person opens verificationUrl in a browser to complete it.';
  readonly scopes = ['verification:write'] as const;
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false };
  readonly input = z.object({ idempotencyKey: idempotencyKey(false) });
  readonly idempotency = 'optional' as const;
  constructor(private readonly verification: VerificationService) {}
  readonly steps = true;
  /** As its REST twin: the provider call first, then the locked write. */
  run(ctx: McpToolContext) {
    const org = ctx.principal.organizationId;
    return Promise.resolve(
      new IdempotentSteps(
        (session: Awaited<ReturnType<VerificationService['createIdentitySession']>>) => this.verification.recordIdentitySession(org, session),
        () => this.verification.createIdentitySession(org),
      ),
    );
  }
}
