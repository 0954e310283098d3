import { Injectable } from '@nestjs/common';

/** A checkout's status as mirrored from its escrow (or ended by the service), seen by listeners in the same transaction. */
export interface CheckoutStatusChange {
  id: string;
  organizationId: string;
  invoiceId: string | null;
  status: string;
}

/**
 * Listeners of checkout status changes that run inside the transaction of the change, so a
 * resource derived from a checkout (an invoice becoming paid, docs/architecture.md §11) commits
 * with it. Modules that depend on the checkout module register here (at module init), which keeps
 * the dependency one-way. Every process that applies escrow events (api, worker, cli) must import
 * those modules; see docs/decisions.md "Invoice status follows its checkout".
 */
@Injectable()
export class CheckoutHooks {
  private readonly listeners: Array<(change: CheckoutStatusChange) => Promise<void>> = [];

  /** Adds a listener; it runs in the caller's transaction and may throw to roll the change back. */
  onStatusChange(listener: (change: CheckoutStatusChange) => Promise<void>): void {
    this.listeners.push(listener);
  }

  /** Runs every listener in order, in the current transaction. */
  async statusChanged(change: CheckoutStatusChange): Promise<void> {
    for (const l of this.listeners) await l(change);
  }
}
