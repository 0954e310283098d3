import { Injectable } from '@nestjs/common';
import Stripe from 'stripe';
import { AppConfig } from '../../config/app-config';
import { CallbackHeaders, headerValue, IdentityProvider, IdentitySession } from './identity-provider';
import { badSignature } from './sandbox-identity.provider';
import { IdentityOutcome, mapProviderStatus } from './verification.state';

/** Stripe's hosted verification URL lives 48 hours (VerificationSession.url). */
const STRIPE_URL_TTL_MS = 48 * 3600 * 1000;

/**
 * Stripe Identity through the official SDK (docs/architecture.md §12): a `document`
 * VerificationSession per start, `verificationUrl` = the session's `url`. A callback is verified
 * with the SDK's signature check (`STRIPE_WEBHOOK_SECRET`, the `Stripe-Signature` header over the
 * raw body); for an `identity.verification_session.*` event the session is then retrieved, so the
 * status applied is Stripe's current one whatever order events arrive in. `STRIPE_API_BASE`
 * points the SDK at a local stand-in (tests).
 */
@Injectable()
export class StripeIdentityProvider extends IdentityProvider {
  readonly name = 'stripe' as const;
  private readonly stripe: Stripe;

  constructor(private readonly config: AppConfig) {
    super();
    const base = config.env.STRIPE_API_BASE ? new URL(config.env.STRIPE_API_BASE) : null;
    this.stripe = new Stripe(config.env.STRIPE_SECRET_KEY, {
      maxNetworkRetries: 2,
      timeout: 15_000,
      ...(base ? { host: base.hostname, port: base.port || (base.protocol === 'https:' ? 443 : 80), protocol: base.protocol === 'http:' ? 'http' : 'https' } : {}),
    });
  }

  async createSession(organizationId: string): Promise<IdentitySession> {
    const session = await this.stripe.identity.verificationSessions.create({
      type: 'document',
      client_reference_id: organizationId,
      metadata: { organization_id: organizationId },
    });
    if (!session.url) throw new Error(`Stripe returned VerificationSession ${session.id} without a url`);
    return {
      reference: session.id,
      url: session.url,
      expiresAt: new Date(session.created * 1000 + STRIPE_URL_TTL_MS),
      providerStatus: session.status,
      storeUrl: false,
    };
  }

  async parseCallback(rawBody: Buffer, headers: CallbackHeaders): Promise<IdentityOutcome | null> {
    let event: Stripe.Event;
    try {
      event = this.stripe.webhooks.constructEvent(rawBody, headerValue(headers, 'stripe-signature') ?? '', this.config.env.STRIPE_WEBHOOK_SECRET);
    } catch (err) {
      if (err instanceof Stripe.errors.StripeSignatureVerificationError) throw badSignature(err.message);
      throw err;
    }
    if (!event.type.startsWith('identity.verification_session.')) return null;
    const reported = event.data.object as Stripe.Identity.VerificationSession;
    const session = await this.stripe.identity.verificationSessions.retrieve(reported.id);
    const status = mapProviderStatus('stripe', session.status);
    if (!status) return null;
    const lastError = session.last_error ? [session.last_error.code, session.last_error.reason].filter(Boolean).join(': ') || null : null;
    return { provider: 'stripe', reference: session.id, providerStatus: session.status, status, lastError };
  }
}
