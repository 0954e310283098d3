import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerRequest } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import type { Principal } from '../auth/principal';
import { AppError } from '../errors/app-error';

/**
 * Per-credential rate limit (per OAuth client for `bat_` tokens, so minting tokens does not
 * multiply it; per client IP on public routes), counted in Redis. Sets the
 * IETF draft-ietf-httpapi-ratelimit-headers-10 fields `RateLimit-Policy` and `RateLimit` on
 * every response, and answers 429 rate_limited with `Retry-After` when the window is spent.
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    const principal = (req as { principal?: Principal }).principal;
    if (!principal) return `ip:${(req as unknown as Request).ip ?? 'unknown'}`;
    return principal.kind === 'oauth' ? principal.actor : `cred:${principal.credentialId}`;
  }

  protected override generateKey(_ctx: ExecutionContext, tracker: string, name: string): string {
    return `${name}:${tracker}`;
  }

  protected override async handleRequest(props: ThrottlerRequest): Promise<boolean> {
    const { context, limit, ttl, throttler, blockDuration } = props;
    const req = context.switchToHttp().getRequest<Request>();
    const res = context.switchToHttp().getResponse<Response>();
    const tracker = await this.getTracker(req as unknown as Record<string, unknown>);
    const key = this.generateKey(context, tracker, throttler.name ?? 'default');
    const r = await this.storageService.increment(key, ttl, limit, blockDuration, throttler.name ?? 'default');
    const windowSeconds = Math.round(ttl / 1000);
    res.setHeader('RateLimit-Policy', `"default";q=${limit};w=${windowSeconds}`);
    res.setHeader('RateLimit', `"default";r=${Math.max(0, limit - r.totalHits)};t=${r.timeToExpire}`);
    if (r.isBlocked) {
      throw new AppError('rate_limited', 'Too many requests; retry after the window resets', { limit, windowSeconds }, 429, {
        'Retry-After': String(r.timeToBlockExpire),
      });
    }
    return true;
  }
}
