import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { ListEnvelopeDto, ListQueryDto } from '../../../common/http/list.dto';
import { DELIVERY_EVENT_TYPES, DELIVERY_STATUSES, DELIVERY_TARGETS } from '../webhooks.entity';
import type { DeliveryStatus, DeliveryTarget } from '../webhooks.entity';

const STATUS_DESCRIPTION =
  'pending: due now; retrying: failed, next attempt at nextAttemptAt; succeeded; failed: no automatic attempts left (a manual retry is possible); ' +
  'held: an endpoint delivery waiting while the webhook endpoint is disabled (by the merchant or by a 410 Gone): nothing is sent until PUT /api/v1/webhook-endpoints enables it, which sends every held delivery with its original webhook-id';

/** Query of GET /api/v1/webhook-deliveries: the list query (docs/architecture.md §6) plus filters. */
export class ListWebhookDeliveriesQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: DELIVERY_STATUSES, description: STATUS_DESCRIPTION })
  @IsOptional()
  @IsIn(DELIVERY_STATUSES, { message: `status must be one of ${DELIVERY_STATUSES.join(', ')}` })
  status?: DeliveryStatus;

  @ApiPropertyOptional({ enum: DELIVERY_EVENT_TYPES })
  @IsOptional()
  @IsIn(DELIVERY_EVENT_TYPES, { message: `eventType must be one of ${DELIVERY_EVENT_TYPES.join(', ')}` })
  eventType?: string;
}

/** A webhook delivery (docs/architecture.md §8 delivery record). */
export class WebhookDeliveryDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid', description: 'The event id, sent as webhook-id on every attempt' }) eventId: string;
  @ApiProperty({ enum: DELIVERY_EVENT_TYPES, description: 'ping: the test event (POST /api/v1/webhook-endpoints/test)' }) eventType: string;
  @ApiProperty({
    enum: DELIVERY_TARGETS,
    description: "endpoint: the organisation's webhook endpoint as it is at each attempt (a replaced URL or secret applies to retries); checkout: the checkout session's own webhookUrl",
  })
  target: DeliveryTarget;
  @ApiProperty({ format: 'uri', description: 'The URL attempted last (for an endpoint delivery not yet attempted, the endpoint URL when the event was relayed)' }) url: string;
  @ApiProperty({ enum: DELIVERY_STATUSES, description: STATUS_DESCRIPTION }) status: string;
  @ApiProperty({ description: 'Attempts made so far' }) attempts: number;
  @ApiProperty({ type: Number, nullable: true, description: 'HTTP status of the last attempt' }) responseStatus: number | null;
  @ApiProperty({ type: String, nullable: true, description: 'First 4 KiB of the last response body' }) responseBody: string | null;
  @ApiProperty({ type: String, nullable: true }) lastError: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) nextAttemptAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) lastAttemptAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) deliveredAt: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

/** The deliveries list envelope (docs/architecture.md §6). */
export class WebhookDeliveryListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [WebhookDeliveryDto] }) data: WebhookDeliveryDto[];
}
