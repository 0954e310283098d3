import { Injectable } from '@nestjs/common';
import { VerificationService } from '../../../modules/verification/verification.service';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { GET_VERIFICATION } from '../../../modules/verification/verification.operations';

/** svc_verification_get: GET /api/v1/verification. */
@Injectable()
export class VerificationGetTool implements ServiceTool {
  readonly name = 'svc_verification_get';
  readonly title = 'Get the KYB verification';
  readonly description = 'Your organisation’s verification: the wallet check, the identity check and the overall status (verified when both passed).';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = GET_VERIFICATION;
  constructor(private readonly verification: VerificationService) {}
  run(ctx: McpToolContext) {
    return this.verification.get(ctx.principal.organizationId);
  }
}
