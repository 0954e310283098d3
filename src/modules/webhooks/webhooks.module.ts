import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QueueModule } from '../../common/queue/queue.module';
import { DeliveryQueue, WEBHOOK_DELIVERY_QUEUE } from './webhooks.queue';
import { EventFanOut } from './event-fan-out.service';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { WebhooksOperations } from './webhooks.operations';
import { WebhooksService } from './webhooks.service';
import { WebhookSecrets } from './webhook-secrets.service';
import { DnsHostResolver, HostResolver, WebhookUrlService } from './webhook-url.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WebhookEndpoint, WebhookDelivery } from './webhooks.entity';

/**
 * The SSRF guard on its own (docs/architecture.md §8), for modules that take a webhook URL without managing
 * endpoints (checkout's `webhookUrl`): {@link WebhookUrlService} and the {@link HostResolver} port.
 */
@Module({
  providers: [WebhookUrlService, { provide: HostResolver, useClass: DnsHostResolver }],
  exports: [WebhookUrlService, HostResolver],
})
export class WebhookUrlModule {}

/**
 * Webhook endpoints and deliveries (docs/api.md Events; docs/architecture.md §8): what the api's
 * routes (WebhooksHttpModule) and the worker's processors build on (repository, secrets, delivery
 * queue producer). No routes and no processors here: processors are registered only in the
 * WorkerModule.
 */
@Module({
  imports: [TypeOrmModule.forFeature([WebhookEndpoint, WebhookDelivery]), QueueModule, BullModule.registerQueue({ name: WEBHOOK_DELIVERY_QUEUE }), WebhookUrlModule],
  providers: [WebhookEndpointsRepository, WebhookDeliveriesRepository, EventFanOut, WebhooksService, WebhooksOperations, WebhookSecrets, DeliveryQueue],
  exports: [WebhookEndpointsRepository, WebhookDeliveriesRepository, EventFanOut, WebhooksService, WebhooksOperations, WebhookSecrets, DeliveryQueue, WebhookUrlModule, BullModule],
})
export class WebhooksModule {}
