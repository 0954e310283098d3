import { Injectable, Module } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../../common/errors/app-error';
import { errorBody } from '../../common/errors/error-body';
import { toAppError } from '../../common/errors/all-exceptions.filter';
import { requestIdOf } from '../../common/errors/request-id';
import { AppConfig } from '../../config/app-config';
import { clientAddress } from '../authenticator';
import { AuthFailureLimiter } from '../rate-limit/auth-failure.limiter';
import { digestsEqual, hashSecret } from './secrets';

/**
 * The operator credential (`OPERATOR_TOKEN`, docs/architecture.md §10), checked in one place for
 * every operator surface: the api's operator routes (`/metrics`, through the auth guard) and the
 * worker's Bull Board (through {@link middleware}). It accepts `Authorization: Bearer <token>` or
 * HTTP Basic with the token as password (any user name, so a browser prompt works), compared in
 * constant time over SHA-256 digests, under the failed-authentication allowance per client
 * address (DESIGN §17), the same allowance every other credential is checked under.
 */
@Injectable()
export class OperatorCredential {
  private readonly digest: Buffer;

  constructor(
    config: AppConfig,
    private readonly limiter: AuthFailureLimiter,
  ) {
    this.digest = hashSecret(config.secret('OPERATOR_TOKEN'));
  }

  /** The token an Authorization header presents (Bearer, or a Basic password), or null. */
  static presented(header: string): string | null {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (bearer) return bearer[1];
    const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    if (!basic) return null;
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : null;
  }

  /**
   * Checks `req`'s operator credential; a refusal counts against the client address.
   * @throws AppError 401 `unauthorized` without the token; 429 `rate_limited` (Retry-After) once the
   *   address's failed-authentication allowance is spent.
   */
  async check(req: Request): Promise<void> {
    const attempt = await this.limiter.admit(clientAddress(req));
    const presented = OperatorCredential.presented(req.header('authorization') ?? '');
    const ok = presented !== null && digestsEqual(hashSecret(presented), this.digest);
    await attempt.settle(!ok);
    if (!ok) throw new AppError('unauthorized', 'Operator credential required (OPERATOR_TOKEN as Bearer token or Basic password)');
  }

  /** Express middleware guarding an operator page: a refusal answers the error body with a Basic challenge. */
  middleware() {
    return (req: Request, res: Response, next: NextFunction): void => {
      this.check(req).then(
        () => next(),
        (err: unknown) => {
          const e = toAppError(err);
          for (const [name, value] of Object.entries(e.headers)) res.setHeader(name, value);
          if (e.code === 'unauthorized') res.setHeader('WWW-Authenticate', 'Basic realm="operator", charset="UTF-8"');
          res.status(e.status).json(errorBody(e, requestIdOf(req)));
        },
      );
    };
  }
}

/** The operator credential for a process without the kernel (the worker's Bull Board). */
@Module({ providers: [OperatorCredential, AuthFailureLimiter], exports: [OperatorCredential] })
export class OperatorCredentialModule {}
