import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiExtension, ApiForbiddenResponse, ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Request } from 'express';
import { ErrorBody } from '../errors/error-body';
import type { Principal } from './principal';
import type { Scope } from './scopes';

export const PUBLIC_ROUTE = 'auth:public';
export const REQUIRED_SCOPES = 'auth:scopes';
export const AGENT_ONLY = 'auth:agent-only';

/** Marks a route as needing no credential (fee quote, x402 challenge, agent cards, health). */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);

const securityDocs = () =>
  applyDecorators(
    ApiSecurity('apiKey'),
    ApiBearerAuth('bearer'),
    ApiUnauthorizedResponse({ description: 'unauthorized: missing or invalid credential', type: ErrorBody }),
  );

/**
 * Requires a valid credential holding at least one of `scopes` (after `:*` and write⇒read
 * expansion); otherwise 403 missing_scope with `details.required` (SPEC Authentication 3).
 * With no scopes, any valid credential passes (SPEC rows "none listed" that need a caller).
 */
export const RequireScopes = (...scopes: Scope[]) =>
  applyDecorators(
    SetMetadata(REQUIRED_SCOPES, scopes),
    ApiExtension('x-required-scopes', scopes),
    securityDocs(),
    ApiForbiddenResponse({ description: `missing_scope: needs ${scopes.join(' or ') || 'a valid credential'}`, type: ErrorBody }),
  );

/** Requires an agent key (SPEC rows "agent key"); other credentials get 403 forbidden. */
export const RequireAgentKey = (...scopes: Scope[]) =>
  applyDecorators(SetMetadata(AGENT_ONLY, true), ApiExtension('x-agent-key', true), RequireScopes(...scopes));

/** The authenticated {@link Principal} of this request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  return (ctx.switchToHttp().getRequest<Request & { principal: Principal }>()).principal;
});
