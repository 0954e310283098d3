import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { AuthFailureLimiter } from '../rate-limit/auth-failure.limiter';
import { COUNTED, type CountedRequest, RateLimiter } from '../rate-limit/rate-limiter';
import { accessRefusal } from '../access';
import { Authenticator, clientAddress } from '../authenticator';
import { CREDENTIAL_KINDS } from '../http';
import type { Access, CredentialKind } from '../operation';
import { AGENT_ONLY, CONSOLE_AGENT_OWNER, CONSOLE_ONLY, CONSOLE_SESSION, CREDENTIAL_EXCHANGE, OPERATOR_ROUTE, PUBLIC_ROUTE, REQUIRED_SCOPES } from './auth.decorators';
import type { Principal } from './principal';
import type { Scope } from './scopes';

import { OperatorCredential } from './operator-credential';

export { clientAddress, extractCredential } from '../authenticator';

/**
 * The one global guard (docs/architecture.md, Conventions 7): every route needs a valid credential unless marked
 * {@link Public}; scopes come from {@link RequireScopes} metadata. Sets `req.principal`.
 * Before any credential lookup, the client address takes a slot of its allowance of failed
 * authentications ({@link AuthFailureLimiter}; 429 once spent); a failure (401) spends it. The
 * same allowance covers {@link CredentialExchange} routes (the OAuth token endpoint) and
 * {@link OperatorRoute}s, which take `Authorization: Bearer <OPERATOR_TOKEN>` instead of a
 * credential (docs/architecture.md §10). A credential resolved within the last
 * CREDENTIAL_CACHE_TTL_MS comes from the {@link CredentialCache}: no database lookup runs, and
 * the same allowance and the credential's revocation marker are checked in Redis in the round trip
 * the rate limit takes too; {@link CredentialConfirmGuard} awaits that verdict
 * (docs/decisions.md, "Credential cache").
 */
@Injectable()
export class AuthGuard implements CanActivate {
  /** {@link routeOf}'s memo: handler → controller class → its auth metadata. */
  private readonly routes = new WeakMap<object, WeakMap<object, RouteAuth>>();

  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: Authenticator,
    private readonly limiter: AuthFailureLimiter,
    private readonly operatorCredential: OperatorCredential,
    private readonly rateLimiter: RateLimiter,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (ctx.getType() !== 'http') return true;
    const route = this.routeOf(ctx.getHandler(), ctx.getClass());
    const req = ctx.switchToHttp().getRequest<Request & { principal?: Principal }>();
    if (route.operator) return this.operator(req);
    if (route.public) {
      if (route.credentialExchange) {
        const attempt = await this.limiter.admit(clientAddress(req));
        const res = ctx.switchToHttp().getResponse<Response>();
        res.once('finish', () => void attempt.settle(res.statusCode === 401).catch(() => undefined));
        res.once('close', () => void attempt.settle(false).catch(() => undefined));
      }
      return true;
    }
    if (this.authenticator.hasSession(req) || route.consoleSession) {
      req.principal = await this.authenticator.session(req, { organization: !route.consoleSession });
      this.authorize(req.principal, route);
      return true;
    }
    // A cached credential's check also counts the request for the rate limit, in the same Redis
    // command (RateLimitGuard answers from it; docs/decisions.md, "The runner's cost, second pass").
    const hit = this.authenticator.cached(req, (principal) => this.rateLimiter.counter(principal, clientAddress(req)));
    if (hit?.counted) (req as CountedRequest)[COUNTED] = hit.counted;
    if (!hit) {
      req.principal = await this.authenticator.lookup(req);
      this.authorize(req.principal, route);
      return true;
    }
    // A cached credential: its revocation marker and the address's allowance are checked in Redis,
    // but not awaited here. The rate-limit guard's command joins the same auto-pipelined round
    // trip, and CredentialConfirmGuard awaits the verdict before any interceptor or handler runs.
    const confirm = async (): Promise<void> => {
      const principal = await hit.confirm();
      if (principal === hit.principal) return;
      req.principal = principal;
      this.authorize(principal, route);
    };
    req.principal = hit.principal;
    try {
      this.authorize(hit.principal, route);
    } catch (err) {
      await confirm(); // a revoked or blocked credential answers 401/429, not 403
      throw err;
    }
    (req as PendingRequest)[CONFIRM_CREDENTIAL] = confirm;
    return true;
  }

  /**
   * The route's auth metadata, read through the Reflector once per handler and class and kept
   * (route metadata is fixed once the application is built): the guard runs on every request, and
   * seven metadata look-ups and an `Access` object each time were measurable (docs/decisions.md,
   * "The runner's cost").
   */
  private routeOf(handler: object, cls: object): RouteAuth {
    let byClass = this.routes.get(handler);
    const cached = byClass?.get(cls);
    if (cached) return cached;
    const targets = [handler, cls] as Parameters<Reflector['getAllAndOverride']>[1];
    const flag = (key: string) => this.reflector.getAllAndOverride<boolean>(key, targets) ?? false;
    const consoleOnly = flag(CONSOLE_ONLY);
    const route: RouteAuth = {
      operator: flag(OPERATOR_ROUTE),
      public: flag(PUBLIC_ROUTE),
      credentialExchange: flag(CREDENTIAL_EXCHANGE),
      consoleSession: flag(CONSOLE_SESSION),
      access: {
        scopes: this.reflector.getAllAndOverride<Scope[]>(REQUIRED_SCOPES, targets) ?? [],
        kinds: consoleOnly
          ? ['console']
          : flag(AGENT_ONLY)
            ? ['agent']
            : this.reflector.getAllAndOverride<CredentialKind[] | undefined>(CREDENTIAL_KINDS, targets),
        ...(consoleOnly ? { consoleActs: flag(CONSOLE_SESSION) ? 'address' : flag(CONSOLE_AGENT_OWNER) ? 'agent-owner' : 'organization' } : {}),
      },
    };
    if (!byClass) this.routes.set(handler, (byClass = new WeakMap()));
    byClass.set(cls, route);
    return route;
  }

  /**
   * The route's access (RequireScopes / RequireAgentKey / RequireConsole metadata) through the
   * kernel's one check (DESIGN §3, §17, §19; {@link accessRefusal}).
   * @throws AppError 404 not_found for an agent owner's console session off its agent's routes,
   *   403 missing_scope, 403 forbidden (`agent_key_required`, `console_session_required`).
   */
  private authorize(principal: Principal, route: RouteAuth): void {
    const refusal = accessRefusal(principal, route.access);
    if (refusal) throw refusal;
  }

  /** The operator credential ({@link OperatorCredential}: one check for every operator surface). */
  private async operator(req: Request): Promise<boolean> {
    await this.operatorCredential.check(req);
    return true;
  }
}

/** A route's auth metadata as {@link AuthGuard} reads it (the decorators in ./auth.decorators and ../http). */
interface RouteAuth {
  operator: boolean;
  public: boolean;
  credentialExchange: boolean;
  /** `ConsoleSessionRoute`: the session acts for its address, no organisation. */
  consoleSession: boolean;
  /** Console-only routes have `kinds: ['console']` and their `consoleActs`. */
  access: Access;
}

/** Where AuthGuard leaves a cached credential's pending confirmation on the request. */
const CONFIRM_CREDENTIAL = Symbol('confirmCredential');
type PendingRequest = Request & { [CONFIRM_CREDENTIAL]?: () => Promise<void> };

/**
 * The last global guard (after the rate limit): awaits the verdict on a cached credential that
 * {@link AuthGuard} left pending (docs/decisions.md, "Credential cache"). Known → continue; revoked
 * → the credential is looked up again (401 when it is gone); an address out of failed-auth
 * allowance → 429. Nothing past the guards runs before it.
 */
@Injectable()
export class CredentialConfirmGuard implements CanActivate {
  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (ctx.getType() !== 'http') return true;
    const req = ctx.switchToHttp().getRequest<PendingRequest>();
    const confirm = req[CONFIRM_CREDENTIAL];
    if (confirm) {
      delete req[CONFIRM_CREDENTIAL];
      await confirm();
    }
    return true;
  }
}
