import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { components } from './generated/openapi';

/** Webhook event types (the document's `WebhookDeliveryDto.eventType`). */
export type WebhookEventType = components['schemas']['WebhookDeliveryDto']['eventType'];

/**
 * One delivered event (DESIGN §8): `data.object` is the checkout session as the api renders it
 * (amounts as decimal text), `createdAt` ISO-8601 UTC. Receivers dedupe by `id` (= `webhook-id`).
 */
export interface WebhookEvent {
  id: string;
  type: WebhookEventType;
  createdAt: string;
  data: { object: components['schemas']['CheckoutSessionDto'] };
}

/** A delivery whose signature, timestamp or body does not check out; answer it with 400. */
export class WebhookSignatureError extends Error {
  override readonly name = 'WebhookSignatureError';
}

/** Incoming request headers: a fetch `Headers`, or Node's `req.headers`. */
export type IncomingHeaders = Headers | Record<string, string | string[] | undefined>;

const SIGNED_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

function signedHeaders(headers: IncomingHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  const lower = headers instanceof Headers ? undefined : Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  for (const name of SIGNED_HEADERS) {
    const value = headers instanceof Headers ? headers.get(name) : lower![name];
    const one = Array.isArray(value) ? value[0] : value;
    if (one) out[name] = one;
  }
  return out;
}

/** Webhook verification, `pcp.webhooks` (DESIGN §8). */
export class Webhooks {
  /**
   * Verifies a delivery with the `standardwebhooks` library (HMAC-SHA256 over
   * `id.timestamp.body`, any of the `v1,` signatures, timestamp within 5 minutes) and returns the
   * typed event.
   * @param payload the raw request body, exactly as received (string or Buffer; not re-serialised JSON)
   * @param headers the request headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`)
   * @param secret the endpoint's `whsec_…` secret (after a rotation the api signs with both for 24 h)
   * @throws WebhookSignatureError when a header is missing or the signature or timestamp is wrong
   */
  verify(payload: string | Buffer, headers: IncomingHeaders, secret: string): WebhookEvent {
    try {
      return new Webhook(secret).verify(payload, signedHeaders(headers)) as WebhookEvent;
    } catch (err) {
      if (err instanceof WebhookVerificationError) throw new WebhookSignatureError(err.message);
      throw err;
    }
  }
}
