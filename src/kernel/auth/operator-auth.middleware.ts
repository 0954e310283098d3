import type { NextFunction, Request, Response } from 'express';
import { requestIdOf } from '../../common/errors/request-id';
import { digestsEqual, hashSecret } from './secrets';
import { errorBody } from '../../common/errors/error-body';
import { AppError } from '../../common/errors/app-error';

/**
 * Express middleware guarding operator pages (Bull Board, docs/architecture.md §10 `OPERATOR_TOKEN`): accepts
 * `Authorization: Bearer <token>` or HTTP Basic with the token as password (any user name, so a
 * browser prompt works). Compared in constant time over SHA-256 digests. Anything else → 401
 * `unauthorized` in the error body of docs/architecture.md §4, with a Basic challenge.
 */
export function operatorAuth(token: string) {
  const expected = hashSecret(token);
  return (req: Request, res: Response, next: NextFunction): void => {
    const header = req.header('authorization') ?? '';
    let presented: string | null = null;
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    if (bearer) presented = bearer[1];
    else if (basic) {
      const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      presented = colon >= 0 ? decoded.slice(colon + 1) : null;
    }
    if (presented !== null && digestsEqual(hashSecret(presented), expected)) return next();
    res.setHeader('WWW-Authenticate', 'Basic realm="operator", charset="UTF-8"');
    res.status(401).json(errorBody(new AppError('unauthorized', 'Operator credential required (OPERATOR_TOKEN as Bearer token or Basic password)'), requestIdOf(req)));
  };
}
