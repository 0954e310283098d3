import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMinSize, ArrayUnique, IsArray, IsBoolean, IsIn, IsOptional, IsString, IsUrl, MaxLength } from 'class-validator';
import { WEBHOOK_EVENTS } from '../../../common/outbox/webhook-event';
import { ENDPOINT_DISABLED_REASONS } from '../webhooks.entity';

/**
 * Body of PUT /api/v1/webhook-endpoints (docs/api.md Events 3): replaces the organisation's endpoint,
 * creating it (and its secret) when absent. Omitted `enabled` means true, omitted `events` means
 * every event.
 */
export class PutWebhookEndpointDto {
  @ApiProperty({ format: 'uri', maxLength: 2048, example: 'https://shop.example.com/webhooks/payments', description: 'https only; must resolve to a public address (docs/architecture.md §8)' })
  @IsString({ message: 'url must be a URL string' })
  @MaxLength(2048, { message: 'url must be at most 2048 characters' })
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }, { message: 'url must be an absolute https URL' })
  url: string;

  @ApiPropertyOptional({
    default: true,
    description:
      'false stops sending: events keep being recorded as held deliveries. true also re-enables an endpoint disabled by a 410 Gone and sends every held delivery, once, with its original webhook-id',
  })
  @IsOptional()
  @IsBoolean({ message: 'enabled must be a boolean' })
  enabled?: boolean;

  @ApiPropertyOptional({ enum: WEBHOOK_EVENTS, isArray: true, nullable: true, description: 'Event types to send; null or omitted = all' })
  @IsOptional()
  @IsArray({ message: 'events must be an array of event types or null' })
  @ArrayMinSize(1, { message: 'events must list at least one event type, or be null for all' })
  @ArrayUnique({ message: 'events must not repeat an event type' })
  @IsIn(WEBHOOK_EVENTS, { each: true, message: `events must contain only: ${WEBHOOK_EVENTS.join(', ')}` })
  events?: string[] | null;

  @ApiPropertyOptional({
    default: false,
    description:
      'Issue a new secret (returned once); the secret it replaces keeps signing for 24 h. A rotation within those 24 h (e.g. a retried request) replaces only the newest secret: the secret from before the first rotation keeps signing until the original 24 h end',
  })
  @IsOptional()
  @IsBoolean({ message: 'rotateSecret must be a boolean' })
  rotateSecret?: boolean;
}

/** The organisation's webhook endpoint. `secret` appears only in the response that created or rotated it. */
export class WebhookEndpointDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uri' }) url: string;
  @ApiProperty() enabled: boolean;
  @ApiProperty({ enum: WEBHOOK_EVENTS, isArray: true, nullable: true, description: 'null = all event types' }) events: string[] | null;
  @ApiProperty({
    enum: [...ENDPOINT_DISABLED_REASONS, null],
    nullable: true,
    type: String,
    description: 'disabled_by_merchant: PUT enabled=false; gone: it answered 410; failing: every attempt failed for 5 days. Deliveries meanwhile are held',
  })
  disabledReason: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'First failed attempt since the last success; after 5 days of failures the endpoint is disabled (failing)' })
  failingSince: string | null;
  @ApiPropertyOptional({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', description: 'Signing secret, shown only on creation and rotation' })
  secret?: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) secretRotatedAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Until then the previous secret also signs' })
  previousSecretExpiresAt: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}
