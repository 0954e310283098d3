import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { randomBase62 } from '../../kernel/auth/secrets';
import { AppError } from '../../common/errors/app-error';
import { AppConfig } from '../../config/app-config';
import { CallbackHeaders, headerValue, IdentityProvider, IdentitySession } from './identity-provider';
import { IdentityOutcome, mapProviderStatus } from './verification.state';

/** What a person may answer on the sandbox page, in provider words (mapped by PROVIDER_STATUS_MAP). */
export const SANDBOX_OUTCOMES = ['verified', 'requires_input', 'declined'] as const;
export type SandboxOutcome = (typeof SANDBOX_OUTCOMES)[number];

/** Sandbox session lifetime (like a provider's hosted link). */
const SANDBOX_SESSION_TTL_MS = 24 * 3600 * 1000;

/** The sandbox callback body. */
interface SandboxEvent {
  type: 'identity.session.updated';
  data: { reference: string; status: string; lastError: string | null };
}

/**
 * The built-in identity provider for local chains (docs/architecture.md §12): its session is the
 * page `{CHECKOUT_BASE_URL}/verify/{reference}`, where a person completes or fails the check. The
 * page reports like a real provider: a Standard Webhooks callback signed with
 * `IDENTITY_SANDBOX_WEBHOOK_SECRET`, verified by {@link parseCallback} on the same path as a
 * callback POSTed to `/api/v1/verification/providers/sandbox/webhook`.
 */
@Injectable()
export class SandboxIdentityProvider extends IdentityProvider {
  readonly name = 'sandbox' as const;
  private readonly webhook: Webhook;

  constructor(private readonly config: AppConfig) {
    super();
    this.webhook = new Webhook(config.env.IDENTITY_SANDBOX_WEBHOOK_SECRET);
  }

  createSession(): Promise<IdentitySession> {
    const reference = `vsb_${randomBase62(24)}`;
    return Promise.resolve({
      reference,
      url: `${this.config.env.CHECKOUT_BASE_URL.replace(/\/$/, '')}/verify/${reference}`,
      expiresAt: new Date(Date.now() + SANDBOX_SESSION_TTL_MS),
      providerStatus: 'requires_input',
      storeUrl: true,
    });
  }

  /** The signed callback the sandbox page sends for a person's answer: the raw body and its headers. */
  signCallback(reference: string, outcome: SandboxOutcome): { rawBody: Buffer; headers: CallbackHeaders } {
    const event: SandboxEvent = {
      type: 'identity.session.updated',
      data: { reference, status: outcome, lastError: outcome === 'requires_input' ? 'sandbox: the person failed the check' : null },
    };
    const body = JSON.stringify(event);
    const id = `msg_${randomUUID()}`;
    const at = new Date();
    return {
      rawBody: Buffer.from(body),
      headers: { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': this.webhook.sign(id, at, body) },
    };
  }

  parseCallback(rawBody: Buffer, headers: CallbackHeaders): Promise<IdentityOutcome | null> {
    let event: SandboxEvent;
    try {
      event = this.webhook.verify(rawBody.toString('utf8'), {
        'webhook-id': headerValue(headers, 'webhook-id') ?? '',
        'webhook-timestamp': headerValue(headers, 'webhook-timestamp') ?? '',
        'webhook-signature': headerValue(headers, 'webhook-signature') ?? '',
      }) as SandboxEvent;
    } catch (err) {
      if (err instanceof WebhookVerificationError) throw badSignature(err.message);
      throw err;
    }
    const data = event?.data;
    if (event?.type !== 'identity.session.updated' || typeof data?.reference !== 'string' || typeof data.status !== 'string') return Promise.resolve(null);
    const status = mapProviderStatus('sandbox', data.status);
    if (!status) return Promise.resolve(null);
    return Promise.resolve({ provider: 'sandbox', reference: data.reference, providerStatus: data.status, status, lastError: data.lastError ?? null });
  }
}

/** 400 for a callback whose signature does not verify (nothing changes). */
export function badSignature(message: string): AppError {
  return new AppError('invalid_request', `Callback signature does not verify: ${message}`, { reason: 'bad_signature' });
}
