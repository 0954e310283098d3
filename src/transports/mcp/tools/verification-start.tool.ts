import { Injectable } from '@nestjs/common';
import type { Operation } from '../../../kernel/operation';
import { VerificationOperations } from '../../../modules/verification/verification.operations';
import type { McpTool } from '../mcp-tool';

/** svc_verification_start: the operation `start-identity-check` of POST /api/v1/verification/start (declared once in verification.operations.ts). */
@Injectable()
export class VerificationStartTool implements McpTool<Record<string, unknown>> {
  readonly name = 'svc_verification_start';
  readonly title = 'Start the identity check';
  readonly description = 'Opens a session with the identity provider; a person opens verificationUrl in a browser to complete it.';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false };
  readonly operation: Operation<Record<string, unknown>>;
  constructor(ops: VerificationOperations) {
    this.operation = ops.startIdentityCheck;
  }
}
