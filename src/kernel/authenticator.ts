import { Injectable, Optional } from '@nestjs/common';
import type { Request } from 'express';
import { CredentialCache, CredentialRevocations, revocationHandle } from './auth/credential-cache';
import { Principal, PrincipalResolver, SessionAuthenticator } from './auth/principal';
import { hashSecret } from './auth/secrets';
import { AppError } from '../common/errors/app-error';
import { AuthFailureLimiter } from './rate-limit/auth-failure.limiter';
import { RATE_LIMIT_WINDOW_MS, type RateLimitCount, type RateLimitCounter } from './rate-limit/rate-limiter';

/** The parts of a request authentication reads: its headers and the client address. */
export type CredentialSource = Pick<Request, 'header' | 'ip'>;

/**
 * Extracts the credential from `X-Api-Key` or `Authorization: Bearer` (DESIGN §3).
 * @returns undefined when neither header is present.
 * @throws AppError unauthorized when Authorization is not a Bearer credential, or both headers are present and differ.
 */
export function extractCredential(req: Pick<Request, 'header'>): string | undefined {
  const apiKey = req.header('x-api-key')?.trim();
  const authorization = req.header('authorization');
  let bearer: string | undefined;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw new AppError('unauthorized', 'Authorization header must be "Bearer <credential>"');
    bearer = match[1];
  }
  if (apiKey !== undefined && bearer !== undefined && apiKey !== bearer) {
    throw new AppError('unauthorized', 'X-Api-Key and Authorization carry different credentials');
  }
  return apiKey || bearer;
}

/** The client address of `req` (X-Forwarded-For believed only from TRUSTED_PROXIES, via Express `trust proxy`). */
export function clientAddress(req: Pick<Request, 'ip'>): string {
  return req.ip ?? 'unknown';
}

/** A credential found in the process cache: its principal now, and the verdict of its Redis check later. */
export interface CachedCredential {
  principal: Principal;
  /**
   * Awaits the cached credential's check (revocation marker, the address's failed-auth allowance):
   * resolves to the principal to use (looked up again when revoked).
   * @throws AppError 401 unauthorized (revoked and gone), 429 rate_limited.
   */
  confirm(): Promise<Principal>;
  /**
   * With a counter passed to {@link Authenticator.cached}: the request's count in that rate-limit
   * window, taken in the same Redis command as the check (whatever its verdict). Never rejects:
   * a failed command is thrown by {@link confirm}.
   */
  counted?: Promise<RateLimitCount | undefined>;
}

/**
 * The one authenticator (DESIGN §3, §17): credential → principal, for every transport (the REST
 * guard, the MCP endpoint). Before any credential lookup the client address takes a slot of its
 * allowance of failed authentications ({@link AuthFailureLimiter}; 429 once spent) and a 401 spends
 * it. A credential resolved within CREDENTIAL_CACHE_TTL_MS comes from the {@link CredentialCache}
 * with its revocation marker and the allowance checked in one Redis round trip
 * (docs/decisions.md, "Credential cache"). Every accepted credential is reported to
 * {@link PrincipalResolver.used} (an API key's "last used", at most one write a minute). Console
 * sessions (DESIGN §19) are read here too, under the same allowance, for the API's guard and the
 * console pages alike ({@link session}).
 */
@Injectable()
export class Authenticator {
  constructor(
    private readonly resolver: PrincipalResolver,
    private readonly limiter: AuthFailureLimiter,
    private readonly cache: CredentialCache,
    private readonly revocations: CredentialRevocations,
    @Optional() private readonly sessions?: SessionAuthenticator,
  ) {}

  /** Whether `req` carries a console session cookie and no API credential header (an API key always wins). */
  hasSession(req: Request): boolean {
    return this.sessions?.present(req) ?? false;
  }

  /**
   * The console session of `req` as a `console` principal (DESIGN §19), under a slot of the client
   * address's failed-auth allowance, as a credential lookup: an unknown, expired or revoked session
   * → 401 (spends it). `organization`: the session acts for the organisation (or the agent) its
   * headers name; `csrf: false` only for the console pages, GETs that change nothing and embed the token.
   * @throws AppError 401 unauthorized, 429 rate_limited, and {@link SessionAuthenticator.resolve}'s
   *   403 (CSRF) and 404 (organisation or agent not owned).
   */
  async session(req: Request, opts: { organization: boolean; csrf?: boolean }): Promise<Principal> {
    const attempt = await this.limiter.admit(clientAddress(req));
    let principal: Principal | null;
    try {
      if (!this.sessions) throw new AppError('unauthorized', 'No valid console session: sign in again');
      principal = await this.sessions.resolve(req, opts);
    } catch (err) {
      await attempt.settle(false);
      throw err;
    }
    await attempt.settle(principal === null);
    if (!principal) throw new AppError('unauthorized', 'No valid console session: sign in again');
    return principal;
  }

  /**
   * The principal of `req`'s credential, every check awaited.
   * @throws AppError 401 unauthorized, 429 rate_limited.
   */
  async authenticate(req: CredentialSource): Promise<Principal> {
    const hit = this.cached(req);
    return hit ? hit.confirm() : this.lookup(req);
  }

  /**
   * The cached principal of `req`'s credential, with its check started but not awaited, or
   * undefined when it is not cached. Synchronous. With `rateLimit` (the principal's rate-limit
   * counter) the same Redis command also counts the request there ({@link CachedCredential.counted}).
   */
  cached(req: CredentialSource, rateLimit?: (principal: Principal) => RateLimitCounter): CachedCredential | undefined {
    let secret: string | undefined;
    try {
      secret = extractCredential(req);
    } catch {
      return undefined; // the lookup path refuses it and counts the failure
    }
    if (!secret) return undefined;
    const digest = hashSecret(secret).toString('hex');
    const principal = this.cache.get(digest);
    if (!principal) return undefined;
    const address = clientAddress(req);
    const revoked = this.revocations.key(revocationHandle(principal));
    const counter = rateLimit?.(principal);
    const checked = counter
      ? this.limiter.checkKnownAndCount(address, revoked, counter.key, RATE_LIMIT_WINDOW_MS)
      : this.limiter.checkKnown(address, revoked).then((verdict) => ({ verdict, hits: 0, pttl: 0 }));
    const verdict = settle(checked);
    return {
      principal,
      ...(counter ? { counted: verdict.then((v) => ('error' in v ? undefined : { limit: counter.limit, hits: v.value.hits, pttl: v.value.pttl })) } : {}),
      confirm: async () => {
        const v = await verdict;
        if ('error' in v) throw v.error;
        if (v.value.verdict instanceof AppError) throw v.value.verdict;
        if (v.value.verdict === 'known') {
          await this.resolver.used(principal);
          return principal;
        }
        this.cache.evict(digest);
        return this.lookup(req);
      },
    };
  }

  /**
   * Resolves the credential in the database under a slot of the address's allowance, and caches it.
   * @throws AppError 401 unauthorized (spends the allowance), 429 rate_limited.
   */
  async lookup(req: CredentialSource): Promise<Principal> {
    const attempt = await this.limiter.admit(clientAddress(req));
    let principal: Principal | null;
    let secret: string | undefined;
    try {
      secret = extractCredential(req);
      if (!secret) throw new AppError('unauthorized', 'Missing credential: send X-Api-Key or Authorization: Bearer');
      principal = await this.resolver.resolve(secret);
    } catch (err) {
      await attempt.settle(err instanceof AppError && err.code === 'unauthorized');
      throw err;
    }
    if (!principal) {
      await attempt.settle(true);
      throw new AppError('unauthorized', 'Invalid or expired credential');
    }
    // Not awaited: the one Redis connection runs it before any later command of this address.
    void attempt.settle(false).catch(() => undefined);
    this.cache.set(hashSecret(secret!).toString('hex'), principal, principal.expiresAt);
    await this.resolver.used(principal);
    return principal;
  }
}

/** A promise turned into a value that never rejects, so a verdict nobody awaits (an earlier guard threw) raises no unhandled rejection. */
function settle<T>(p: Promise<T>): Promise<{ value: T } | { error: unknown }> {
  return p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}
