import { IdempotentSteps } from '../../../kernel/idempotency/idempotent.decorator';
import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { ConfirmWalletDto } from '../../../modules/verification/dto/verification.dto';
import { VerificationService } from '../../../modules/verification/verification.service';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { idempotencyKey } from './ids';

/** svc_verification_confirm: POST /api/v1/verification/confirm (idempotencyKey required, as the REST header). */
@Injectable()
export class VerificationConfirmTool implements ServiceTool<{ txHash: string }> {
  readonly name = 'svc_verification_confirm';
  readonly title = 'Confirm the wallet check';
  readonly description = 'Report the hash of the USDC transfer that pays the wallet check; it is verified on chain.';
  readonly scopes = ['verification:write'] as const;
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly input = z.object({
    txHash: z.string().describe('Hash of the USDC transfer from your payout address'),
    idempotencyKey: idempotencyKey(true),
  });
  readonly dto = ConfirmWalletDto;
  readonly idempotency = 'required' as const;
  constructor(private readonly verification: VerificationService) {}
  readonly steps = true;
  /** As its REST twin: the on-chain proof first, then the locked write. */
  run(ctx: McpToolContext, input: { txHash: string }) {
    const org = ctx.principal.organizationId;
    return Promise.resolve(
      new IdempotentSteps(
        (proof: Awaited<ReturnType<VerificationService['proveWalletPayment']>>) => this.verification.recordWalletPayment(org, proof),
        () => this.verification.proveWalletPayment(org, input.txHash),
      ),
    );
  }
}
