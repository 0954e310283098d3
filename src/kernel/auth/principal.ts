import type { Scope } from './scopes';

/**
 * Who is calling, resolved from a credential by the auth guard (docs/architecture.md §3).
 * `actor` is the idempotency principal: `merchant` for merchant keys, `agent:<id>`, `oauth:<clientId>`,
 * `console:<address>` for a console session acting for one organisation it owns (§19). A console
 * principal with `agentId` set acts for that one agent, whose owner address it is, and holds no scope.
 */
export interface Principal {
  kind: 'merchant' | 'agent' | 'oauth' | 'console';
  credentialId: string;
  organizationId: string;
  agentId: string | null;
  actor: string;
  grantedScopes: readonly string[];
  scopes: ReadonlySet<Scope>;
  /** The signed-in wallet address (checksummed) of a `console` principal. */
  address?: string;
  /** When the credential itself expires (ms since the epoch; OAuth access tokens), if it does. */
  expiresAt?: number;
}

/** Port the guard uses to turn a secret into a principal; implemented by the orgs module. */
export abstract class PrincipalResolver {
  /** @returns the principal, or null for an unknown, revoked, expired or malformed secret. */
  abstract resolve(secret: string): Promise<Principal | null>;
  /**
   * Records that `principal`'s credential authenticated a request (an API key's "last used",
   * docs/decisions.md "API key last used"): at most one write per key per minute, so most calls do
   * nothing. Never throws: a failed write is logged and the request goes on.
   */
  abstract used(principal: Principal): Promise<void>;
}

/**
 * Port the guard uses for console sessions (docs/architecture.md §19), implemented by the console
 * module: a session cookie, its CSRF header and one owned organisation become a `console` principal.
 */
export abstract class SessionAuthenticator {
  /** Whether the request carries a console session cookie (and no API credential header). */
  abstract present(req: import('express').Request): boolean;
  /**
   * @param opts.csrf false only for the console pages (GETs that embed the token): the CSRF header is not asked for.
   * @returns the console principal, or null for an unknown, expired or revoked session (401).
   * @throws AppError forbidden (`csrf_token_invalid`) without the session's CSRF header; not_found when
   *   the organisation named by `X-Console-Organization` is missing or not owned by the session's address.
   */
  abstract resolve(req: import('express').Request, opts: { organization: boolean; csrf?: boolean }): Promise<Principal | null>;
}
