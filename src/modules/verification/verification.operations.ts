import { Injectable } from '@nestjs/common';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { ConfirmWalletDto } from './dto/verification.dto';
import { VerificationService } from './verification.service';

/** `get-verification` (GET /verification, svc_verification_get): the KYB status. verification:read; no key. */
export const GET_VERIFICATION: OperationSpec = { name: 'get-verification', scopes: ['verification:read'], idempotency: 'none' };

/** `start-wallet-check` (POST /verification/checkout, svc_verification_checkout; docs/architecture.md §12): the chain head first, then the locked write. */
export const START_WALLET_CHECK: OperationSpec = { name: 'start-wallet-check', scopes: ['verification:write'], idempotency: 'optional' };

/** `confirm-wallet-check` (POST /verification/confirm, svc_verification_confirm): the on-chain proof first (no transaction held), then the locked write. Key required. */
export const CONFIRM_WALLET_CHECK: OperationSpec<ConfirmWalletDto> = { name: 'confirm-wallet-check', scopes: ['verification:write'], input: ConfirmWalletDto, idempotency: 'required' };

/** `start-identity-check` (POST /verification/start, svc_verification_start): the identity provider's call first, then the locked write. */
export const START_IDENTITY_CHECK: OperationSpec = { name: 'start-identity-check', scopes: ['verification:write'], idempotency: 'optional' };

/**
 * The verification module's operations (DESIGN §17: declared once; REST states them with `@Runs`,
 * MCP tools name them). Each work is `{prepare, run}`: the network step before the idempotency
 * record's transaction opens (docs/architecture.md §5).
 */
@Injectable()
export class VerificationOperations {
  readonly startWalletCheck: Operation;
  readonly confirmWalletCheck: Operation<ConfirmWalletDto>;
  readonly startIdentityCheck: Operation;

  constructor(verification: VerificationService) {
    this.startWalletCheck = defineOperation(START_WALLET_CHECK, ({ principal }) => ({
      prepare: () => verification.walletCheckHead(principal.organizationId),
      run: (prepared) => verification.issueWalletCheck(principal.organizationId, prepared as Awaited<ReturnType<VerificationService['walletCheckHead']>>),
    }));
    this.confirmWalletCheck = defineOperation(CONFIRM_WALLET_CHECK, ({ principal }, input) => ({
      prepare: () => verification.proveWalletPayment(principal.organizationId, input.txHash),
      run: (proof) => verification.recordWalletPayment(principal.organizationId, proof as Awaited<ReturnType<VerificationService['proveWalletPayment']>>),
    }));
    this.startIdentityCheck = defineOperation(START_IDENTITY_CHECK, ({ principal }) => ({
      prepare: () => verification.createIdentitySession(principal.organizationId),
      run: (session) => verification.recordIdentitySession(principal.organizationId, session as Awaited<ReturnType<VerificationService['createIdentitySession']>>),
    }));
  }
}
