import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new signing secret: `whsec_` + base64 of 32 random bytes (Standard Webhooks; Standard Webhooks). */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The event body of docs/architecture.md §8 / docs/decisions.md. */
export interface WebhookEventBody {
  id: string;
  type: string;
  createdAt: string;
  data: { object: Record<string, unknown> };
}

/** Serialises an event once; these exact bytes are signed and sent. */
export function serializeEvent(event: { id: string; type: string; createdAt: Date; data: { object: Record<string, unknown> } }): string {
  const body: WebhookEventBody = { id: event.id, type: event.type, createdAt: event.createdAt.toISOString(), data: { object: event.data.object } };
  return JSON.stringify(body);
}

/**
 * The three Standard Webhooks headers for one attempt (docs/architecture.md §8): `webhook-id` (the event id,
 * the same on every attempt), `webhook-timestamp` (unix seconds of this attempt) and
 * `webhook-signature`, one `v1,<base64 HMAC-SHA256>` per live secret, space-separated (two
 * during a rotation's overlap). Signing uses the `standardwebhooks` library itself.
 * @throws Error when `secrets` is empty or a secret is not `whsec_<base64>`.
 */
export function signatureHeaders(secrets: string[], msgId: string, at: Date, body: string): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  if (secrets.length === 0) throw new Error('no signing secret');
  const signature = secrets.map((s) => new Webhook(s).sign(msgId, at, body)).join(' ');
  return { 'webhook-id': msgId, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
}
