import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

const VALID_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/** The request id of this request; set by {@link requestIdMiddleware} before anything else runs. */
export function requestIdOf(req: Request): string {
  return (req as Request & { id?: string }).id ?? 'unknown';
}

/**
 * Reuses a well-formed incoming `X-Request-Id` (8–128 of `[A-Za-z0-9._:-]`) or makes a UUID, and
 * echoes it in the response header on every response, success or error (docs/architecture.md §4).
 */
export function requestIdMiddleware(req: Request, res: Response, next: NextFunction): void {
  const incoming = req.header('x-request-id');
  const id = incoming && VALID_ID.test(incoming) ? incoming : `req_${randomUUID()}`;
  (req as Request & { id?: string }).id = id;
  res.setHeader('X-Request-Id', id);
  next();
}
