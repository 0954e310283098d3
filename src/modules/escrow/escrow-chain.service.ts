import { Injectable } from '@nestjs/common';
import { type ChainClock, ChainVerificationError, EscrowChainEvent, EscrowGateway, FundingTerms, isConfirmed, type UsdcGateway, VerifiedAction } from '@lib/chain';
import { JsonRpcProvider, Wallet } from 'ethers';
import { AppConfig } from '../../config/app-config';
import type { SecretName } from '../../config/secrets';
import { AppError } from '../../common/errors/app-error';
import { ChainAccess } from '../../chain/chain-access.service';

/**
 * The escrows' view of the chain (docs/architecture.md §7): the chain room's provider and {@link EscrowGateway},
 * the terms-signer, relayer and arbiter wallets, and verification that maps chain failures to API
 * errors. Amounts are USDC base units. Each wallet is built on first use from a key its process
 * loaded (docs/architecture.md §10: the api holds no arbiter key); using one the process did not
 * load throws, naming the key.
 */
@Injectable()
export class EscrowChainService {
  readonly provider: JsonRpcProvider;
  readonly gateway: EscrowGateway;
  readonly usdc: UsdcGateway;
  readonly clock: ChainClock;
  private readonly wallets = new Map<SecretName, Wallet>();

  constructor(
    readonly config: AppConfig,
    private readonly chain: ChainAccess,
  ) {
    this.provider = chain.provider;
    this.gateway = chain.gateway;
    this.usdc = chain.usdc;
    this.clock = chain.clock;
  }

  get termsSigner(): Wallet {
    return this.wallet('TERMS_SIGNER_PRIVATE_KEY');
  }

  get relayer(): Wallet {
    return this.wallet('RELAYER_PRIVATE_KEY');
  }

  get arbiter(): Wallet {
    return this.wallet('ARBITER_PRIVATE_KEY');
  }

  private wallet(name: SecretName): Wallet {
    let wallet = this.wallets.get(name);
    if (!wallet) {
      wallet = new Wallet(this.config.secret(name), this.provider);
      this.wallets.set(name, wallet);
    }
    return wallet;
  }

  get chainId(): number {
    return this.config.env.CHAIN_ID;
  }

  /** EIP-712 signature of the funding terms by the terms key (checked on-chain by CheckoutEscrow.fund*). */
  signTerms(terms: FundingTerms): Promise<string> {
    return this.gateway.signFundingTerms(this.termsSigner, terms, this.chainId);
  }

  /**
   * Verifies that `txHash` performed `action` on the escrow, sent by one of `senders`, and is
   * confirmed by the one rule ({@link isConfirmed}: `head − CONFIRMATIONS ≥ block`, DESIGN §18).
   * Network calls only: the caller must hold no database transaction or pooled connection
   * (docs/architecture.md §5); each RPC request times out after RPC_TIMEOUT_MS.
   * @throws AppError 400 invalid_request with `details.reason` (not_found, failed, wrong_contract,
   *   wrong_escrow, wrong_action, wrong_sender), or 409 with `details.reason: "pending"` while unmined or
   *   unconfirmed, or 503 `unavailable` with `details.reason: "chain_unavailable"` and `Retry-After` when the
   *   node fails the read twice (ChainAccess.read, DESIGN §22; not stored under an Idempotency-Key: the
   *   retry runs again).
   */
  async verify(txHash: string, escrowKey: string, action: EscrowChainEvent['action'], senders: string[]): Promise<VerifiedAction> {
    let verified: VerifiedAction;
    try {
      verified = await this.chain.read('escrow action transaction', () => this.gateway.verifyActionTx(txHash, { escrowKey, action, expectedSender: senders }));
    } catch (err) {
      if (err instanceof ChainVerificationError) {
        if (err.reason === 'pending') throw new AppError('invalid_request', err.message, { reason: 'pending', txHash }, 409);
        throw new AppError('invalid_request', err.message, { reason: err.reason, txHash, fields: [{ param: 'txHash', message: err.message }] });
      }
      throw err;
    }
    const confirmations = this.config.env.CONFIRMATIONS;
    if (confirmations > 0) {
      const head = await this.chain.read('head block', () => this.clock.headBlock());
      if (!isConfirmed(verified.blockNumber, head, confirmations)) {
        throw new AppError('invalid_request', `transaction ${txHash} has not reached ${confirmations} confirmations`, { reason: 'pending', txHash }, 409);
      }
    }
    return verified;
  }
}
