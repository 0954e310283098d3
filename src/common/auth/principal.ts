import type { Scope } from './scopes';

/**
 * Who is calling, resolved from a credential by the auth guard (docs/architecture.md §3).
 * `actor` is the idempotency principal: `merchant` for merchant keys, `agent:<id>`, `oauth:<clientId>`.
 */
export interface Principal {
  kind: 'merchant' | 'agent' | 'oauth';
  credentialId: string;
  organizationId: string;
  agentId: string | null;
  actor: string;
  grantedScopes: readonly string[];
  scopes: ReadonlySet<Scope>;
  /** When the credential itself expires (ms since the epoch; OAuth access tokens), if it does. */
  expiresAt?: number;
}

/** Port the guard uses to turn a secret into a principal; implemented by the orgs module. */
export abstract class PrincipalResolver {
  /** @returns the principal, or null for an unknown, revoked, expired or malformed secret. */
  abstract resolve(secret: string): Promise<Principal | null>;
}
