import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type { Wallet } from 'ethers';
import type { RelayRequest } from '../../chain/relayer/relayer.service';
import type { Payment, PaymentMode } from './payment.entity';

/** Every payment mode (DESIGN §13 `mode`); each must have a handler in a process that settles payments. */
export const PAYMENT_MODES: readonly PaymentMode[] = ['instant', 'x402', 'a2a', 'escrow'];

/** The stored EIP-3009 authorization of a payment (recovery point "signed"). */
export interface StoredAuthorization {
  nonce: string;
  validBefore: number;
  signature: string;
}

/**
 * How one payment mode signs and relays (DESIGN §13): instant, x402 and A2A a transferWithAuthorization
 * to the payee's stored address; agent escrows a receiveWithAuthorization into the escrow contract under
 * signed terms. Provided by the module that owns the mode; the reservation, recovery points and
 * settlement stay in PaymentsService.
 */
export interface PaymentModeHandler {
  /** Inside the reservation transaction, after the payment row is inserted (e.g. the checkout session). */
  onReserved?(payment: Payment, extra: Record<string, unknown>): Promise<void>;
  /** Signs the authorization with the agent's signer (called once per payment). */
  authorize(payment: Payment, signer: Wallet): Promise<StoredAuthorization>;
  /** The relayer transaction that uses the stored authorization. */
  relayRequest(payment: Payment): Promise<RelayRequest>;
}

/** A payment of a mode this process has no handler for: nothing is signed or relayed (issue 28, item 2). */
export class UnknownPaymentModeError extends Error {
  constructor(readonly mode: string) {
    super(`no handler for payment mode "${mode}" in this process: the payment is left as it is (nothing signed or relayed)`);
  }
}

/**
 * The payment mode table (issue 28 item 2; DESIGN §13): one handler per mode, each provided by the
 * module that owns it (PaymentsModule: instant, x402, a2a; AgentEscrowsModule: escrow), which calls
 * {@link provide} from its provider's constructor. It fails closed: {@link get} throws for a mode
 * without a handler (there is no default transfer), and at start-up ({@link onApplicationBootstrap},
 * after every module's providers exist) a process holding PaymentsService — the api and the worker,
 * the processes that settle payments — refuses to start unless every mode of {@link PAYMENT_MODES}
 * has its handler.
 */
@Injectable()
export class PaymentModes implements OnApplicationBootstrap {
  private readonly handlers = new Map<PaymentMode, PaymentModeHandler>();

  /**
   * Sets the handler of `mode` (once; called by the owning module).
   * @throws Error when `mode` is unknown or already has another handler.
   */
  provide(mode: PaymentMode, handler: PaymentModeHandler): void {
    if (!PAYMENT_MODES.includes(mode)) throw new UnknownPaymentModeError(mode);
    const current = this.handlers.get(mode);
    if (current && current !== handler) throw new Error(`payment mode "${mode}" already has a handler`);
    this.handlers.set(mode, handler);
  }

  /** The handler of `mode`. @throws UnknownPaymentModeError when this process has none. */
  get(mode: PaymentMode): PaymentModeHandler {
    const handler = this.handlers.get(mode);
    if (!handler) throw new UnknownPaymentModeError(mode);
    return handler;
  }

  /** The modes of {@link PAYMENT_MODES} without a handler here. */
  missing(): PaymentMode[] {
    return PAYMENT_MODES.filter((m) => !this.handlers.has(m));
  }

  /** The start-up check. @throws Error naming the modes without a handler (the process does not start). */
  onApplicationBootstrap(): void {
    const missing = this.missing();
    if (missing.length) {
      throw new Error(`payment modes without a handler in this process: ${missing.join(', ')} (import the module that provides each; issue 28)`);
    }
  }
}
