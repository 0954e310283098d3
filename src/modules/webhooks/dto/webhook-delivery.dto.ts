import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { ListEnvelopeDto, ListQueryDto } from '../../../common/http/list.dto';
import { WEBHOOK_EVENTS } from '../../../common/outbox/webhook-event';
import { DELIVERY_STATUSES } from '../webhooks.entity';
import type { DeliveryStatus } from '../webhooks.entity';

/** Query of GET /api/v1/webhook-deliveries: the list query (DESIGN §6) plus filters. */
export class ListWebhookDeliveriesQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: DELIVERY_STATUSES })
  @IsOptional()
  @IsIn(DELIVERY_STATUSES, { message: `status must be one of ${DELIVERY_STATUSES.join(', ')}` })
  status?: DeliveryStatus;

  @ApiPropertyOptional({ enum: WEBHOOK_EVENTS })
  @IsOptional()
  @IsIn(WEBHOOK_EVENTS, { message: `eventType must be one of ${WEBHOOK_EVENTS.join(', ')}` })
  eventType?: string;
}

/** A webhook delivery (DESIGN §8 delivery record). */
export class WebhookDeliveryDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid', description: 'The event id, sent as webhook-id on every attempt' }) eventId: string;
  @ApiProperty({ enum: WEBHOOK_EVENTS }) eventType: string;
  @ApiProperty({ format: 'uri' }) url: string;
  @ApiProperty({ enum: DELIVERY_STATUSES }) status: string;
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

/** The deliveries list envelope (DESIGN §6). */
export class WebhookDeliveryListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [WebhookDeliveryDto] }) data: WebhookDeliveryDto[];
}
