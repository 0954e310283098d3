import { Injectable } from '@nestjs/common';
import type { Operation } from '../../../kernel/operation';
import { VerificationOperations } from '../../../modules/verification/verification.operations';
import type { McpTool } from '../mcp-tool';

/** svc_verification_checkout: the operation `start-wallet-check` of POST /api/v1/verification/checkout (declared once in verification.operations.ts). */
@Injectable()
export class VerificationCheckoutTool implements McpTool<Record<string, unknown>> {
  readonly name = 'svc_verification_checkout';
  readonly title = 'Start the wallet check';
  readonly description = 'Issues the exact USDC amount to send from your payout address to payTo within 90 minutes (the open one again while it lasts).';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly operation: Operation<Record<string, unknown>>;
  constructor(ops: VerificationOperations) {
    this.operation = ops.startWalletCheck;
  }
}
