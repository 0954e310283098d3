import { Injectable, OnApplicationBootstrap } from '@nestjs/common';

/** Why an agent stopped spending: paused (operator, console) or its session signer disabled. */
export type SpendingStopReason = 'agent_paused' | 'signer_disabled';

/**
 * The agents module's announcements to the module that owns the records they touch, run inside the
 * transaction of the change (docs/architecture.md "Ownership map": the payments table is written by
 * the payments module alone, which depends on this one). The payments module registers at module
 * init; a process that can pause an agent without it refuses the change rather than leave unsigned
 * payments reserved: it refuses to start (the same shape as {@link CheckoutHooks}, checked like the
 * payment mode table, issue 28).
 */
@Injectable()
export class AgentHooks implements OnApplicationBootstrap {
  private spendingStopListener: ((agentId: string, reason: SpendingStopReason) => Promise<void>) | null = null;

  /** Registers the one listener of {@link spendingStopped}. @throws Error when one is registered already. */
  onSpendingStopped(listener: (agentId: string, reason: SpendingStopReason) => Promise<void>): void {
    if (this.spendingStopListener) throw new Error('AgentHooks: a spending-stop listener is registered already');
    this.spendingStopListener = listener;
  }

  /** @throws Error at start-up when no listener registered (the process did not load the payments module). */
  onApplicationBootstrap(): void {
    if (!this.spendingStopListener) throw new Error('AgentHooks: no spending-stop listener; the process must import PaymentsModule');
  }

  /**
   * The agent stopped spending (`reason`); call after the agent row's UPDATE in the same transaction,
   * whose lock waits for any reservation in flight, so the listener sees its payment.
   * @throws Error when no listener is registered (the process did not load the payments module).
   */
  async spendingStopped(agentId: string, reason: SpendingStopReason): Promise<void> {
    if (!this.spendingStopListener) throw new Error('AgentHooks: no spending-stop listener; the process must import PaymentsModule');
    await this.spendingStopListener(agentId, reason);
  }
}
