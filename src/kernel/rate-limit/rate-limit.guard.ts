import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Principal } from '../auth/principal';
import { clientAddress } from '../authenticator';
import { COUNTED, type CountedRequest, RateLimiter } from './rate-limiter';

/**
 * The REST face of the kernel's per-credential rate limit ({@link RateLimiter}; DESIGN §17: on
 * REST the runner's steps stay Nest's own). Sets `RateLimit-Policy` and `RateLimit` on every
 * response, and answers 429 rate_limited with `Retry-After` when the window is spent. Health and
 * metrics are not counted.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(private readonly limiter: RateLimiter) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (ctx.getType() !== 'http') return true;
    const req = ctx.switchToHttp().getRequest<Request & { principal?: Principal }>();
    const url = req.url ?? '';
    if (url.startsWith('/health') || url === '/metrics') return true;
    // A cached credential was counted in its check's Redis command (AuthGuard); else count now.
    const counted = await (req as CountedRequest)[COUNTED];
    const headers = counted ? this.limiter.verdict(counted.limit, counted.hits, counted.pttl) : await this.limiter.consume(req.principal, clientAddress(req));
    const res = ctx.switchToHttp().getResponse<Response>();
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    return true;
  }
}
