import type { IdentityOutcome, IdentityProviderName } from './verification.state';

/** A session opened with an identity provider: where the person goes, until when. */
export interface IdentitySession {
  reference: string;
  /** The provider's hosted page; single use. */
  url: string;
  expiresAt: Date;
  providerStatus: string;
  /** Whether the URL may be kept at rest and shown again (Stripe asks not to store its session URL). */
  storeUrl: boolean;
}

/** Request headers as Node gives them. */
export type CallbackHeaders = Record<string, string | string[] | undefined>;

/**
 * Port of the identity check (docs/architecture.md §12, `IDENTITY_PROVIDER`): opens a session for
 * an organisation and turns a provider's signed callback into an {@link IdentityOutcome}. Both
 * calls may use the network, so callers run them outside any database transaction.
 */
export abstract class IdentityProvider {
  abstract readonly name: IdentityProviderName;

  /** Opens a session for the organisation. @throws Error when the provider refuses or is unreachable. */
  abstract createSession(organizationId: string): Promise<IdentitySession>;

  /**
   * Verifies the callback's signature over the exact bytes received and reads the session's status.
   * @returns the mapped outcome, or null for an event about something else (acknowledged, ignored).
   * @throws AppError 400 invalid_request `details.reason: "bad_signature"` when the signature does not verify.
   */
  abstract parseCallback(rawBody: Buffer, headers: CallbackHeaders): Promise<IdentityOutcome | null>;
}

/** First value of a header. */
export function headerValue(headers: CallbackHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}
