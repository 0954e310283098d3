import { Injectable } from '@nestjs/common';
import type { Operation } from '../../../kernel/operation';
import { ConfirmWalletDto } from '../../../modules/verification/dto/verification.dto';
import { VerificationOperations } from '../../../modules/verification/verification.operations';
import type { McpTool } from '../mcp-tool';

/** svc_verification_confirm: the operation `confirm-wallet-check` of POST /api/v1/verification/confirm (declared once in verification.operations.ts). */
@Injectable()
export class VerificationConfirmTool implements McpTool<ConfirmWalletDto> {
  readonly name = 'svc_verification_confirm';
  readonly title = 'Confirm the wallet check';
  readonly description = 'Report the hash of the USDC transfer that pays the wallet check; it is verified on chain.';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly operation: Operation<ConfirmWalletDto>;
  constructor(ops: VerificationOperations) {
    this.operation = ops.confirmWalletCheck;
  }
}
