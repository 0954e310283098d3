import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Put, Query } from '@nestjs/common';
import { ApiConflictResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, RequireScopes } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { ErrorBody } from '../../common/errors/error-body';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { NoStore } from '../../common/http/no-store.decorator';
import { Runs } from '../../kernel/http';
import { ListWebhookDeliveriesQueryDto, WebhookDeliveryDto, WebhookDeliveryListDto } from './dto/webhook-delivery.dto';
import { PutWebhookEndpointDto, WebhookEndpointDto } from './dto/webhook-endpoint.dto';
import { WebhookErrors } from './webhooks.errors';
import { PUT_WEBHOOK_ENDPOINT, RETRY_WEBHOOK_DELIVERY, SEND_TEST_WEBHOOK, WebhooksOperations } from './webhooks.operations';
import { WebhooksService } from './webhooks.service';

const notFoundOnBadId = new ParseUUIDPipe({ exceptionFactory: () => WebhookErrors.deliveryNotFound() });

/** GET/PUT /api/v1/webhook-endpoints (docs/api.md Events 3). */
@ApiTags('webhooks')
@Controller('api/v1/webhook-endpoints')
export class WebhookEndpointsController {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly ops: WebhooksOperations,
  ) {}

  @Get()
  @RequireScopes('webhooks:read')
  @ApiOperation({ summary: "The organisation's webhook endpoint (its secret is never shown here)" })
  @ApiOkResponse({ type: WebhookEndpointDto })
  @ApiStandardErrors({ notFound: true })
  get(@CurrentPrincipal() principal: Principal): Promise<WebhookEndpointDto> {
    return this.webhooks.getEndpoint(principal);
  }

  @Put()
  @HttpCode(200)
  @NoStore()
  @Runs(PUT_WEBHOOK_ENDPOINT)
  @ApiOperation({
    summary: 'Create or replace the webhook endpoint; rotateSecret issues a new secret',
    description:
      'The whsec_ secret is returned only on creation and on rotation. After a rotation the old secret also signs for 24 h (two v1 signatures); ' +
      'rotating again within those 24 h replaces only the newest secret, so a retried rotation never retires the secret already deployed. ' +
      'enabled=false holds new deliveries (status held); enabled=true sends them. ' +
      'Not replayable by Idempotency-Key: a stored replay would keep the plaintext secret at rest.',
  })
  @ApiOkResponse({ type: WebhookEndpointDto })
  @ApiStandardErrors()
  put(@CurrentPrincipal() principal: Principal, @Body() body: PutWebhookEndpointDto): Promise<WebhookEndpointDto> {
    // Idempotency `none`: no interceptor runs a work here, so the route calls what the operation's work calls.
    return this.webhooks.putEndpoint(principal, body);
  }

  @Post('test')
  @HttpCode(200)
  @Runs(SEND_TEST_WEBHOOK)
  @ApiOperation({
    summary: 'Send a test event (type ping) to the endpoint',
    description:
      'A `ping` event (not one of the event types; never sent otherwise) delivered to the endpoint whatever its events filter, signed and retried like any event; ' +
      'it shows in the deliveries log. The same Idempotency-Key replays the first answer instead of sending again.',
  })
  @ApiOkResponse({ type: WebhookDeliveryDto })
  @ApiConflictResponse({ description: 'invalid_request (details.reason endpoint_disabled): the endpoint is disabled', type: ErrorBody })
  @ApiStandardErrors({ notFound: true })
  sendTest(@CurrentPrincipal() principal: Principal) {
    return this.ops.sendTest.work({ principal, params: {} }, {});
  }
}

/** GET /api/v1/webhook-deliveries and POST …/{id}/retry (docs/api.md Events 4). */
@ApiTags('webhooks')
@Controller('api/v1/webhook-deliveries')
export class WebhookDeliveriesController {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly ops: WebhooksOperations,
  ) {}

  @Get()
  @RequireScopes('webhooks:read')
  @ApiOperation({ summary: 'List webhook deliveries, newest first' })
  @ApiOkResponse({ type: WebhookDeliveryListDto })
  @ApiStandardErrors()
  list(@CurrentPrincipal() principal: Principal, @Query() q: ListWebhookDeliveriesQueryDto): Promise<WebhookDeliveryListDto> {
    return this.webhooks.listDeliveries(principal, q);
  }

  @Post(':id/retry')
  @HttpCode(200)
  @Runs(RETRY_WEBHOOK_DELIVERY)
  @ApiOperation({ summary: 'Attempt a delivery once more, now, with the same webhook-id' })
  @ApiOkResponse({ type: WebhookDeliveryDto })
  @ApiConflictResponse({ description: 'invalid_request (details.reason endpoint_disabled): the endpoint is disabled', type: ErrorBody })
  @ApiStandardErrors({ notFound: true })
  retry(@CurrentPrincipal() principal: Principal, @Param('id', notFoundOnBadId) id: string) {
    return this.ops.retryDelivery.work({ principal, params: { id } }, {});
  }
}
