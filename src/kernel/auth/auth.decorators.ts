import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiExtension, ApiForbiddenResponse, ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Request } from 'express';
import { ErrorBody } from '../../common/errors/error-body';
import type { Principal } from './principal';
import type { Scope } from './scopes';

export const PUBLIC_ROUTE = 'auth:public';
export const REQUIRED_SCOPES = 'auth:scopes';
export const AGENT_ONLY = 'auth:agent-only';
export const CREDENTIAL_EXCHANGE = 'auth:credential-exchange';
export const OPERATOR_ROUTE = 'auth:operator';
export const CONSOLE_ONLY = 'auth:console-only';
export const CONSOLE_SESSION = 'auth:console-session';
export const CONSOLE_AGENT_OWNER = 'auth:console-agent-owner';

/** Marks a route as needing no credential (fee quote, x402 challenge, agent cards, health). */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);

/**
 * A public route that checks a secret itself (the OAuth token endpoint): its 401s spend the
 * client address's allowance of failed authentications, and a spent allowance answers 429
 * before the route runs (docs/decisions.md, "Authentication failures").
 */
export const CredentialExchange = () => applyDecorators(Public(), SetMetadata(CREDENTIAL_EXCHANGE, true));

/**
 * An operator route on the api port (`/metrics`): needs `Authorization: Bearer <OPERATOR_TOKEN>`
 * instead of a credential (docs/architecture.md §10); anything else → 401 unauthorized.
 */
export const OperatorRoute = () => SetMetadata(OPERATOR_ROUTE, true);

const securityDocs = () =>
  applyDecorators(
    ApiSecurity('apiKey'),
    ApiBearerAuth('bearer'),
    ApiUnauthorizedResponse({ description: 'unauthorized: missing or invalid credential', type: ErrorBody }),
  );

/**
 * Requires a valid credential holding at least one of `scopes` (after `:*` and write⇒read
 * expansion); otherwise 403 missing_scope with `details.required` (docs/api.md Authentication 3).
 * With no scopes, any valid credential passes (docs/api.md rows "none listed" that need a caller).
 */
export const RequireScopes = (...scopes: Scope[]) =>
  applyDecorators(
    SetMetadata(REQUIRED_SCOPES, scopes),
    ApiExtension('x-required-scopes', scopes),
    securityDocs(),
    ApiForbiddenResponse({ description: `missing_scope: needs ${scopes.join(' or ') || 'a valid credential'}`, type: ErrorBody }),
  );

/** Requires an agent key (docs/api.md rows "agent key"); other credentials get 403 forbidden. */
export const RequireAgentKey = (...scopes: Scope[]) =>
  applyDecorators(SetMetadata(AGENT_ONLY, true), ApiExtension('x-agent-key', true), RequireScopes(...scopes));

/** The authenticated {@link Principal} of this request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  return (ctx.switchToHttp().getRequest<Request & { principal: Principal }>()).principal;
});

/**
 * Requires a console session acting for one organisation it owns (docs/architecture.md §19):
 * owner actions such as minting keys and agents, which API keys may not take. Other credentials
 * get 403 forbidden (`console_session_required`). `agentOwner: true` also admits a session acting
 * for one agent whose owner address it is (`X-Console-Agent`, DESIGN §19 "an agent's ownerAddress
 * manages the agent"); the handler must then keep to `principal.agentId`. Every route without it
 * answers such a session 404.
 */
export const RequireConsole = (opts: { agentOwner?: boolean } = {}) =>
  applyDecorators(
    SetMetadata(CONSOLE_ONLY, true),
    ...(opts.agentOwner ? [SetMetadata(CONSOLE_AGENT_OWNER, true)] : []),
    ApiExtension('x-console-session', true),
    ApiSecurity('consoleSession'),
    RequireScopes(),
  );

/**
 * A console route that acts for the signed-in address, not for an organisation (sign-out,
 * self-serve organisation creation): needs the session cookie and its CSRF header only.
 */
export const ConsoleSessionRoute = () =>
  applyDecorators(SetMetadata(CONSOLE_SESSION, true), SetMetadata(CONSOLE_ONLY, true), ApiSecurity('consoleSession'), ApiUnauthorizedResponse({ description: 'unauthorized: no valid console session', type: ErrorBody }));
