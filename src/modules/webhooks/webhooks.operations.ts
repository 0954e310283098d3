import { Injectable } from '@nestjs/common';
import { requireUuid } from '../../common/http/path-id';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { PutWebhookEndpointDto } from './dto/webhook-endpoint.dto';
import { WebhooksService } from './webhooks.service';

/**
 * `put-webhook-endpoint` (PUT /webhook-endpoints, svc_webhook_endpoint_put; docs/api.md Events 3):
 * creates or replaces the endpoint. webhooks:write. Idempotency `none`: a stored replay would keep
 * the plaintext secret at rest, so no transport records it (REST ignores the header; the runner
 * checks a key's form and then runs the call unkeyed).
 */
export const PUT_WEBHOOK_ENDPOINT: OperationSpec<PutWebhookEndpointDto> = { name: 'put-webhook-endpoint', scopes: ['webhooks:write'], input: PutWebhookEndpointDto, idempotency: 'none' };

/** `retry-webhook-delivery` (POST /webhook-deliveries/{id}/retry, svc_webhook_deliveries_retry; docs/api.md Events 4). webhooks:write; Idempotency-Key optional; `{id}` is the path parameter. */
export const RETRY_WEBHOOK_DELIVERY: OperationSpec = { name: 'retry-webhook-delivery', scopes: ['webhooks:write'], idempotency: 'optional' };

/**
 * `send-test-webhook` (POST /webhook-endpoints/test; docs/api.md Events 3): a `ping` event to the
 * endpoint. webhooks:write; Idempotency-Key optional (the same key replays the first answer instead
 * of sending again); no input.
 */
export const SEND_TEST_WEBHOOK: OperationSpec = { name: 'send-test-webhook', scopes: ['webhooks:write'], idempotency: 'optional' };

/**
 * The webhook operations with their work (DESIGN §17: declared once; REST states them with `@Runs`,
 * MCP tools name them). Each work is `{run}`. The PUT route, which takes no key, has no interceptor
 * to hand a work to and calls {@link WebhooksService.putEndpoint} itself, as this work does.
 */
@Injectable()
export class WebhooksOperations {
  readonly putEndpoint: Operation<PutWebhookEndpointDto>;
  readonly retryDelivery: Operation;
  readonly sendTest: Operation;

  constructor(webhooks: WebhooksService) {
    this.putEndpoint = defineOperation(PUT_WEBHOOK_ENDPOINT, (ctx, input) => ({ run: () => webhooks.putEndpoint(ctx.principal, input) }));
    this.retryDelivery = defineOperation(RETRY_WEBHOOK_DELIVERY, (ctx) => {
      const id = requireUuid(ctx.params.id, 'webhook delivery');
      return { run: () => webhooks.retryDelivery(ctx.principal, id) };
    });
    this.sendTest = defineOperation(SEND_TEST_WEBHOOK, (ctx) => ({ run: () => webhooks.sendTestEvent(ctx.principal) }));
  }
}
