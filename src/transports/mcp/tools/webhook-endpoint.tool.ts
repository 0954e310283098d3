import { Injectable } from '@nestjs/common';
import type { Operation } from '../../../kernel/operation';
import type { PutWebhookEndpointDto } from '../../../modules/webhooks/dto/webhook-endpoint.dto';
import { GET_WEBHOOK_ENDPOINT, WebhooksOperations } from '../../../modules/webhooks/webhooks.operations';
import { WebhooksService } from '../../../modules/webhooks/webhooks.service';
import type { McpTool, McpToolContext, ServiceTool } from '../mcp-tool';

/** svc_webhook_endpoint_get: GET /api/v1/webhook-endpoints. */
@Injectable()
export class WebhookEndpointGetTool implements ServiceTool {
  readonly name = 'svc_webhook_endpoint_get';
  readonly title = 'Get the webhook endpoint';
  readonly description = 'Your organisation’s webhook endpoint (its secret is never shown here).';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = GET_WEBHOOK_ENDPOINT;
  constructor(private readonly webhooks: WebhooksService) {}
  run(ctx: McpToolContext) {
    return this.webhooks.getEndpoint(ctx.principal);
  }
}

/**
 * svc_webhook_endpoint_put: the operation `put-webhook-endpoint` of PUT /api/v1/webhook-endpoints
 * (declared once in webhooks.operations.ts). Like its REST twin it takes no idempotency key
 * (idempotency `none`): a stored replay would keep a plaintext secret at rest.
 */
@Injectable()
export class WebhookEndpointPutTool implements McpTool<PutWebhookEndpointDto> {
  readonly name = 'svc_webhook_endpoint_put';
  readonly title = 'Create or replace the webhook endpoint';
  readonly description = 'Sets the webhook URL; rotateSecret issues a new whsec_ secret, returned once.';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false };
  readonly operation: Operation<PutWebhookEndpointDto>;
  constructor(ops: WebhooksOperations) {
    this.operation = ops.putEndpoint;
  }
}
