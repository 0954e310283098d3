import { Injectable } from '@nestjs/common';
import { hexlify, randomBytes, type Wallet } from 'ethers';
import { ChainAccess } from '../../chain/chain-access.service';
import type { RelayRequest } from '../../chain/relayer/relayer.service';
import type { Payment } from './payment.entity';
import { PaymentModeHandler, PaymentModes, StoredAuthorization } from './payment-modes';

/** Seconds an agent payment's EIP-3009 authorization stays valid (validBefore = chain now + this; docs/architecture.md §13). */
export const PAYMENT_VALIDITY_SECONDS = 600;
/** Relayer `purpose` of a payment's transferWithAuthorization relay (reference = the payment id). */
export const PAYMENT_RELAY_PURPOSE = 'payment';

/**
 * The payment modes that pay the payee's stored address with the signer's EIP-3009
 * transferWithAuthorization (DESIGN §13, §14): `instant` (POST /payments), `x402` (our own and other
 * servers' challenges) and `a2a` (payment-submitted). PaymentsModule provides them in the mode table
 * ({@link PaymentModes}); `escrow` is AgentEscrowsModule's.
 */
@Injectable()
export class TransferPaymentMode implements PaymentModeHandler {
  constructor(
    private readonly chain: ChainAccess,
    modes: PaymentModes,
  ) {
    for (const mode of ['instant', 'x402', 'a2a'] as const) modes.provide(mode, this);
  }

  /** A transferWithAuthorization to `toAddress` for `amount`, valid for PAYMENT_VALIDITY_SECONDS of chain time, random nonce. */
  async authorize(p: Payment, signer: Wallet): Promise<StoredAuthorization> {
    const validBefore = (await this.chain.headTimestamp()) + PAYMENT_VALIDITY_SECONDS;
    const auth = await this.chain.usdc.signTransferAuthorization(signer, { to: p.toAddress, value: p.amount, validBefore: BigInt(validBefore), nonce: hexlify(randomBytes(32)) });
    return { nonce: auth.nonce, validBefore, signature: auth.signature };
  }

  /** USDC's transferWithAuthorization with the stored authorization (purpose `payment`, reference the payment id). */
  async relayRequest(p: Payment): Promise<RelayRequest> {
    return {
      to: this.chain.usdc.address,
      data: this.chain.usdc.encodeTransferWithAuthorization({
        from: p.fromAddress,
        to: p.toAddress,
        value: p.amount,
        validAfter: 0n,
        validBefore: BigInt(p.authValidBefore!),
        nonce: p.authNonce!,
        signature: p.authSignature!,
      }),
      purpose: PAYMENT_RELAY_PURPOSE,
      reference: p.id,
    };
  }
}
