import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { BullBoardModule } from '@bull-board/nestjs';
import type { BullBoardModuleOptions } from '@bull-board/nestjs/dist/bull-board.types';
import { Module } from '@nestjs/common';
import { OperatorCredential, OperatorCredentialModule } from './kernel/auth/operator-credential';
import { CoreModule } from './core.module';
import { PROCESS_SECRETS } from './config/secrets';
import { IdempotencyReaperModule, MAINTENANCE_QUEUE } from './kernel/idempotency/idempotency-reaper.module';
import { CHAIN_QUEUE, EscrowJobsModule } from './modules/escrow/escrow-jobs.processor';
import { HealthModule } from './transports/health/health.module';
import { OutboxRelayProcessor } from './modules/webhooks/delivery/outbox-relay.processor';
import { WebhookDeliveryModule } from './modules/webhooks/delivery/webhook-delivery.module';
import { WebhookDeliveryProcessor } from './modules/webhooks/delivery/webhook-delivery.processor';
import { WEBHOOK_JOBS_QUEUE, WebhookJobsModule } from './modules/webhooks/delivery/webhook-jobs.processor';
import { WebhooksModule } from './modules/webhooks/webhooks.module';
import { WEBHOOK_DELIVERY_QUEUE } from './modules/webhooks/webhooks.queue';
import { AgentEscrowsModule } from './modules/agent-escrows/agent-escrows.module';
import { PAYMENT_AUTHORIZATIONS_QUEUE, PAYMENTS_QUEUE, PaymentsWorkerModule } from './modules/payments/payments.worker.module';
import { RELAYER_QUEUE } from './chain/relayer/relayer.queue';
import { RelayerWorkerModule } from './chain/relayer/relayer.worker.module';
import { INVOICES_QUEUE, InvoicesWorkerModule } from './modules/invoices/invoices.processor';
import { RECONCILE_QUEUE, ReconciliationWorkerModule } from './chain/reconciliation/reconciliation.worker.module';
import { X402_QUEUE, X402SettlementsWorkerModule } from './modules/payments/x402-settlements.worker.module';
import { REFUNDS_QUEUE, RefundsWorkerModule } from './modules/refunds/refunds.worker.module';

/**
 * Where Bull Board is served on the worker's port. (The adapter cast: @bull-board/express 9.10.1
 * carries its own @bull-board/api 9.10.1 beside our 9.10.2, so the types are nominally distinct.)
 */
export const BULL_BOARD_ROUTE = '/admin/queues';

/**
 * The worker process (docs/architecture.md §1): the core and the features' service modules,
 * plus the queue processors, which are registered here only: the outbox relay loop, the webhook
 * delivery processor, the recovery pass and the 30-day retention pass (BullMQ job schedulers), the chain jobs (indexer,
 * auto-release, checkout expiry), the hourly idempotency reaper, the relayer queue (every
 * relayer transaction, docs/architecture.md §5), the payment jobs (USDC authorization indexer,
 * idle-payment sweep), the x402 settlement sweep, invoice email delivery (which also registers the invoices' listener of
 * the checkout changes the indexer applies), and reconciliation of the ledger against the chain
 * every RECONCILE_INTERVAL_S (DESIGN §18). It imports no `*.http.module.ts` (a
 * dependency-cruiser rule holds it to that), so its HTTP port (WORKER_PORT) serves only
 * `/health/live`, `/health/ready`, `/metrics` and Bull Board at `/admin/queues` behind
 * OPERATOR_TOKEN.
 */
@Module({
  imports: [
    CoreModule.forProcess({ name: 'worker', secrets: PROCESS_SECRETS.worker }),
    WebhooksModule,
    WebhookDeliveryModule,
    WebhookJobsModule,
    EscrowJobsModule,
    IdempotencyReaperModule,
    RelayerWorkerModule,
    PaymentsWorkerModule,
    // The payment modes register with PaymentsService when their module loads (the "escrow" mode
    // here), so the worker's sweep settles agent escrows too.
    AgentEscrowsModule,
    InvoicesWorkerModule,
    ReconciliationWorkerModule,
    X402SettlementsWorkerModule,
    RefundsWorkerModule,
    HealthModule,
    BullBoardModule.forRootAsync({
      imports: [OperatorCredentialModule],
      inject: [OperatorCredential],
      useFactory: (operator: OperatorCredential) => ({
        route: BULL_BOARD_ROUTE,
        adapter: ExpressAdapter as unknown as BullBoardModuleOptions['adapter'],
        middleware: operator.middleware(),
        boardOptions: { uiConfig: { boardTitle: 'Worker queues' } },
      }),
    }),
    BullBoardModule.forFeature(
      { name: WEBHOOK_DELIVERY_QUEUE, adapter: BullMQAdapter },
      { name: WEBHOOK_JOBS_QUEUE, adapter: BullMQAdapter },
      { name: CHAIN_QUEUE, adapter: BullMQAdapter },
      { name: MAINTENANCE_QUEUE, adapter: BullMQAdapter },
      { name: RELAYER_QUEUE, adapter: BullMQAdapter },
      { name: PAYMENTS_QUEUE, adapter: BullMQAdapter },
      { name: PAYMENT_AUTHORIZATIONS_QUEUE, adapter: BullMQAdapter },
      { name: INVOICES_QUEUE, adapter: BullMQAdapter },
      { name: RECONCILE_QUEUE, adapter: BullMQAdapter },
      { name: X402_QUEUE, adapter: BullMQAdapter },
      { name: REFUNDS_QUEUE, adapter: BullMQAdapter },
    ),
  ],
  providers: [WebhookDeliveryProcessor, OutboxRelayProcessor],
})
export class WorkerModule {}
