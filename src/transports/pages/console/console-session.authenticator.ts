import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { Principal, SessionAuthenticator } from '../../../kernel/auth/principal';
import { expandScopes, MERCHANT_SCOPES } from '../../../kernel/auth/scopes';
import { AppError } from '../../../common/errors/app-error';
import { OrgsService } from '../../../modules/orgs/orgs.service';
import { parse as parseCookie } from 'cookie';
import { AGENT_HEADER, ConsoleAuthService, CSRF_HEADER, HOST_SESSION_COOKIE, ORGANIZATION_HEADER, SESSION_COOKIE } from './console-auth.service';
import { validate as isUuid } from 'uuid';


/** The names a console session cookie can have: the plain one (http localhost) and the `__Host-` one (HTTPS). */
const CONSOLE_COOKIE_NAMES = new Set([SESSION_COOKIE, HOST_SESSION_COOKIE]);

/**
 * The value of the console session cookie `name` in the `Cookie` header (RFC 6265 §5.4; each pair
 * parsed with the `cookie` package), or undefined. Over HTTPS `name` is `__Host-pcp_console` and the
 * plain name is not read (a sibling host could set it).
 * @throws AppError 401 unauthorized (`details.reason: "ambiguous_session_cookie"`) when the header
 *   carries two console cookies (either name, twice or both): which session acts would be a guess.
 */
export function sessionCookie(req: Pick<Request, 'header'>, name: string): string | undefined {
  const header = req.header('cookie');
  if (!header) return undefined;
  let value: string | undefined;
  let count = 0;
  for (const pair of header.split(';')) {
    const parsed = parseCookie(pair);
    for (const [k, v] of Object.entries(parsed)) {
      if (!CONSOLE_COOKIE_NAMES.has(k)) continue;
      count += 1;
      if (k === name) value = v;
    }
  }
  if (count > 1) throw new AppError('unauthorized', 'The request carries more than one console session cookie', { reason: 'ambiguous_session_cookie' });
  return value;
}

/**
 * Turns a console session into a principal of kind `console` (docs/architecture.md §19), the hook
 * the auth guard calls: a live session cookie, the session's CSRF token in `X-CSRF-Token` (on every
 * request, reads included, so no cross-site request can act or read), and, for organisation
 * routes, `X-Console-Organization` naming an organisation the session's address owns (or, without
 * it, `X-Console-Agent` naming an agent whose owner address it is: then no scope, that agent only). The
 * principal holds every merchant scope (an owner's), `credentialId` = the session id, `actor` =
 * `console:<address>`; it is never cached, so a revoked session is refused on its next request.
 */
@Injectable()
export class ConsoleSessionAuthenticator extends SessionAuthenticator {
  private static readonly OWNER_SCOPES = [...MERCHANT_SCOPES];

  constructor(
    private readonly auth: ConsoleAuthService,
    private readonly orgs: OrgsService,
  ) {
    super();
  }

  /** A session cookie and no API credential header (an API key always wins). */
  present(req: Request): boolean {
    if (req.header('x-api-key') !== undefined || req.header('authorization') !== undefined) return false;
    return sessionCookie(req, this.auth.cookieName) !== undefined;
  }

  /**
   * @param opts.organization act for the organisation (or agent) the headers name; false: for the address alone.
   * @param opts.csrf false for the console pages only (GETs that embed the token; they change nothing).
   * @returns the principal, or null for a missing, unknown, expired or revoked session.
   * @throws AppError 403 forbidden (`details.reason: "csrf_token_invalid"`) without the session's CSRF
   *   token; 404 not_found (organization) when the organisation is missing, malformed or not owned.
   */
  async resolve(req: Request, opts: { organization: boolean; csrf?: boolean }): Promise<Principal | null> {
    const token = sessionCookie(req, this.auth.cookieName);
    const session = await this.auth.session(token);
    if (!session || !token) return null;
    if (opts.csrf !== false && !ConsoleAuthService.csrfMatches(token, req.header(CSRF_HEADER))) {
      throw new AppError('forbidden', 'Console requests need the X-CSRF-Token of the session', { reason: 'csrf_token_invalid' });
    }
    let organizationId = '';
    const agentId = req.header(AGENT_HEADER);
    if (opts.organization && req.header(ORGANIZATION_HEADER) === undefined && agentId !== undefined) {
      // An agent's owner address manages that agent (DESIGN §19), not its organisation: no scope,
      // and the guard admits it to the agent's own routes only.
      const agent = isUuid(agentId) ? await this.orgs.agentOwnedBy(agentId, session.address) : null;
      if (!agent) throw AppError.notFound('agent');
      return {
        kind: 'console',
        credentialId: session.id,
        organizationId: agent.organizationId,
        agentId: agent.id,
        actor: `console:${session.address.toLowerCase()}`,
        grantedScopes: [],
        scopes: new Set(),
        address: session.address,
        expiresAt: session.expiresAt.getTime(),
      };
    }
    if (opts.organization) {
      organizationId = req.header(ORGANIZATION_HEADER) ?? '';
      if (!isUuid(organizationId) || !(await this.orgs.isOwner(organizationId, session.address))) throw AppError.notFound('organization');
    }
    return {
      kind: 'console',
      credentialId: session.id,
      organizationId,
      agentId: null,
      actor: `console:${session.address.toLowerCase()}`,
      grantedScopes: ConsoleSessionAuthenticator.OWNER_SCOPES,
      scopes: expandScopes(ConsoleSessionAuthenticator.OWNER_SCOPES),
      address: session.address,
      expiresAt: session.expiresAt.getTime(),
    };
  }
}
