/* The payments module's implementations of the ports other modules name for reads of the payments table (issue 31). */
import { Injectable } from '@nestjs/common';
import type { AgentUsage } from '../agents/agent.types';
import { AgentUsageSource } from '../agents/agent-usage.port';
import { MandateUsageSource } from '../mandates/mandate-usage.port';
import { CheckoutPaymentsSource } from '../checkout/checkout-payments.port';
import { PaymentsRepository } from './payments.repository';

/** The payments module's side of agents' {@link AgentUsageSource} port: an agent's usage summed over its payments (issue 31). */
@Injectable()
export class PaymentsAgentUsage extends AgentUsageSource {
  constructor(private readonly repo: PaymentsRepository) {
    super();
  }

  usage(agentId: string, dayStart: Date, monthStart: Date, settledNonces: string[] = [], trustedBlock: number | null = null): Promise<AgentUsage> {
    return this.repo.agentUsage(agentId, dayStart, monthStart, settledNonces, trustedBlock);
  }
}

/** The payments module's side of mandates' {@link MandateUsageSource} port: each mandate's usage summed over its payments (issue 31). */
@Injectable()
export class PaymentsMandateUsage extends MandateUsageSource {
  constructor(private readonly repo: PaymentsRepository) {
    super();
  }

  usedAmounts(ids: string[]): Promise<Map<string, bigint>> {
    return this.repo.mandateUsedAmounts(ids);
  }
}

/** The payments module's side of checkout's {@link CheckoutPaymentsSource} port: the payments attached to a checkout (issue 31). */
@Injectable()
export class PaymentsOfCheckout extends CheckoutPaymentsSource {
  constructor(private readonly repo: PaymentsRepository) {
    super();
  }

  escrowPayer(checkoutId: string): Promise<string | null> {
    return this.repo.escrowPayerOfCheckout(checkoutId);
  }

  hasPayment(checkoutId: string): Promise<boolean> {
    return this.repo.hasPaymentForCheckout(checkoutId);
  }
}
