/** JSON calls from the hosted pages to their own origin (CSP connect-src 'self'). */

/** A non-2xx answer in our error body `{error, code, details}` (docs/architecture.md §4). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly details: Record<string, unknown>,
    message: string,
  ) {
    super(message);
  }

  /** `details.reason` when present. */
  get reason(): string | undefined {
    return typeof this.details.reason === 'string' ? this.details.reason : undefined;
  }
}

/**
 * GET (no body) or POST (JSON body) `path`; resolves with the parsed JSON body.
 * @throws ApiError on a non-2xx answer; TypeError when the network fails.
 */
export async function api<T>(path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
    credentials: 'omit',
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!res.ok) {
    const e = (json ?? {}) as { error?: string; code?: string; details?: Record<string, unknown> };
    throw new ApiError(res.status, e.code ?? 'internal', e.details ?? {}, e.error ?? `HTTP ${res.status}`);
  }
  return json as T;
}
