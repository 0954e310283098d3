import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AppError } from '../errors/app-error';
import { AGENT_ONLY, PUBLIC_ROUTE, REQUIRED_SCOPES } from './auth.decorators';
import { Principal, PrincipalResolver } from './principal';
import type { Scope } from './scopes';

/**
 * Extracts the credential from `X-Api-Key` or `Authorization: Bearer` (SPEC Authentication 2).
 * @returns undefined when neither header is present.
 * @throws AppError unauthorized when Authorization is not a Bearer credential, or both headers are present and differ (DESIGN §3).
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

/**
 * The one global guard (STYLE §7): every route needs a valid credential unless marked
 * {@link Public}; scopes come from {@link RequireScopes} metadata. Sets `req.principal`.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly resolver: PrincipalResolver,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (ctx.getType() !== 'http') return true;
    const targets = [ctx.getHandler(), ctx.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const req = ctx.switchToHttp().getRequest<Request & { principal?: Principal }>();
    const secret = extractCredential(req);
    if (!secret) throw new AppError('unauthorized', 'Missing credential: send X-Api-Key or Authorization: Bearer');
    const principal = await this.resolver.resolve(secret);
    if (!principal) throw new AppError('unauthorized', 'Invalid or expired credential');
    req.principal = principal;
    const required = this.reflector.getAllAndOverride<Scope[]>(REQUIRED_SCOPES, targets) ?? [];
    if (required.length > 0 && !required.some((s) => principal.scopes.has(s))) {
      throw new AppError('missing_scope', `This operation needs scope ${required.join(' or ')}`, {
        required,
        granted: principal.grantedScopes,
      });
    }
    if (this.reflector.getAllAndOverride<boolean>(AGENT_ONLY, targets) && principal.kind !== 'agent') {
      throw new AppError('forbidden', 'This operation needs an agent key', { reason: 'agent_key_required' });
    }
    return true;
  }
}
