import { Module } from '@nestjs/common';
import { WebhookDeliveriesController, WebhookEndpointsController } from './webhooks.controller';
import { WebhooksModule } from './webhooks.module';

/** `/api/v1/webhook-endpoints` and `/api/v1/webhook-deliveries`; api only (docs/architecture.md §1). */
@Module({ imports: [WebhooksModule], controllers: [WebhookEndpointsController, WebhookDeliveriesController] })
export class WebhooksHttpModule {}
