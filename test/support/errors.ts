import type { DataSource } from 'typeorm';
import type { Response } from 'supertest';

/** Keys an error body may carry (docs/api.md "Errors"): error, code, requestId, and optional details. */
const ERROR_KEYS = ['code', 'details', 'error', 'requestId'];

/**
 * Asserts `res` is an error in the service's one body shape `{error, code, requestId, details?}`
 * (docs/architecture.md §4) with this status and code, and that `requestId` equals the `X-Request-Id` header.
 * @returns the body's `details` (undefined when absent) for further assertions.
 */
export function expectError(res: Response, status: number, code: string): Record<string, unknown> | undefined {
  const summary = `${res.status} ${res.text?.slice(0, 300)}`;
  expect({ summary, status: res.status }).toEqual({ summary, status });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body.code).toBe(code);
  expect(typeof res.body.error).toBe('string');
  expect(res.body.error.length).toBeGreaterThan(0);
  expect(typeof res.body.requestId).toBe('string');
  expect(res.body.requestId).toBe(res.headers['x-request-id']);
  for (const key of Object.keys(res.body)) expect(ERROR_KEYS).toContain(key);
  return res.body.details as Record<string, unknown> | undefined;
}

/** Asserts a 400 invalid_request whose `details.fields[].param` names `param`. */
export function expectInvalidParam(res: Response, param: string): void {
  const details = expectError(res, 400, 'invalid_request');
  const fields = (details?.fields ?? []) as Array<{ param: string; message: string }>;
  expect(fields.map((f) => f.param)).toContain(param);
  for (const f of fields) expect(typeof f.message).toBe('string');
}

/** Number of checkout sessions an organisation has (files run in parallel, so always scope counts). */
export async function countSessions(ds: DataSource, organizationId: string): Promise<number> {
  const rows: Array<{ n: number }> = await ds.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE organization_id = $1', [organizationId]);
  return rows[0].n;
}

/** Number of idempotency records an organisation has. */
export async function countIdempotencyRecords(ds: DataSource, organizationId: string): Promise<number> {
  const rows: Array<{ n: number }> = await ds.query('SELECT count(*)::int AS n FROM idempotency_records WHERE organization_id = $1', [organizationId]);
  return rows[0].n;
}
