import { Injectable } from '@nestjs/common';
import { ListWebhookDeliveriesQueryDto } from '../../../modules/webhooks/dto/webhook-delivery.dto';
import type { Operation } from '../../../kernel/operation';
import { LIST_WEBHOOK_DELIVERIES, WebhooksOperations } from '../../../modules/webhooks/webhooks.operations';
import { WebhooksService } from '../../../modules/webhooks/webhooks.service';
import type { McpTool, McpToolContext, ServiceTool } from '../mcp-tool';
import { idParams } from './ids';

/** svc_webhook_deliveries_list: GET /api/v1/webhook-deliveries. */
@Injectable()
export class WebhookDeliveriesListTool implements ServiceTool<ListWebhookDeliveriesQueryDto & Record<string, unknown>> {
  readonly name = 'svc_webhook_deliveries_list';
  readonly title = 'List webhook deliveries';
  readonly description = 'Webhook deliveries, newest first; filter by status or eventType.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = LIST_WEBHOOK_DELIVERIES;
  constructor(private readonly webhooks: WebhooksService) {}
  run(ctx: McpToolContext, q: ListWebhookDeliveriesQueryDto) {
    return this.webhooks.listDeliveries(ctx.principal, q);
  }
}

/** svc_webhook_deliveries_retry: the operation `retry-webhook-delivery` of POST /api/v1/webhook-deliveries/{id}/retry (declared once in webhooks.operations.ts). */
@Injectable()
export class WebhookDeliveriesRetryTool implements McpTool {
  readonly name = 'svc_webhook_deliveries_retry';
  readonly title = 'Retry a webhook delivery';
  readonly description = 'Attempts a delivery once more, now, with the same webhook-id.';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly params = idParams('delivery');
  readonly operation: Operation;
  constructor(ops: WebhooksOperations) {
    this.operation = ops.retryDelivery;
  }
}
