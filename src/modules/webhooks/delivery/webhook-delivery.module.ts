import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks.module';
import { DeliveryRecoveryService } from './delivery-recovery.service';
import { OutboxRelayService } from './outbox-relay.service';
import { WebhookDeliveryService } from './webhook-delivery.service';
import { WebhookMetrics } from './webhooks.metrics';
import { WebhookRetentionService } from './webhook-retention.service';
import { WebhookSender } from './webhook-sender.service';

/**
 * The delivery path's services (relay, attempt, recovery, retention, sender, metrics). Imported by the
 * WorkerModule only, which registers the processors that drive them; the api never sends.
 */
@Module({
  imports: [WebhooksModule],
  providers: [WebhookSender, WebhookDeliveryService, OutboxRelayService, DeliveryRecoveryService, WebhookMetrics, WebhookRetentionService],
  exports: [WebhookDeliveryService, OutboxRelayService, DeliveryRecoveryService, WebhookMetrics, WebhookRetentionService],
})
export class WebhookDeliveryModule {}
