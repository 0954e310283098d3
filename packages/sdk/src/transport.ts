import { ConnectionError, errorFromResponse, retryAfterMs } from './errors';

/**
 * How the client authenticates (DESIGN §3): a merchant key `bk_live_…` or an agent key
 * `bk_agent_live_…` as `X-Api-Key`, any credential as `Authorization: Bearer`, or OAuth client
 * credentials exchanged at `POST /oauth/token` for a `bat_…` token, renewed before it expires.
 */
export type Credentials =
  | { apiKey: string }
  | { bearerToken: string }
  | { oauth: { clientId: string; clientSecret: string; scope?: string } };

/** Retry policy for requests that are safe to repeat (GET, or one carrying an Idempotency-Key). */
export interface RetryOptions {
  /** Retries after the first attempt (default 2; 0 turns retries off). */
  maxRetries?: number;
  /** First backoff in ms, doubled per retry with full jitter (default 500). */
  baseDelayMs?: number;
  /** Cap of one backoff, and of a `Retry-After` the client will wait for (default 20 000 ms). */
  maxDelayMs?: number;
}

/** Statuses retried for an idempotent request: 429 rate_limited, 503 unavailable; 409 only with `Retry-After` (the same key still in flight, DESIGN §5). */
const RETRY_STATUSES = new Set([429, 503]);
/** A token is renewed this long before the `expires_in` the server gave. */
const TOKEN_RENEW_MS = 30_000;

/** True for requests the api treats as safe to repeat: reads, and writes carrying an Idempotency-Key (DESIGN §5). */
export function isRetryable(request: Request): boolean {
  return request.method === 'GET' || request.method === 'HEAD' || request.headers.has('idempotency-key');
}

/**
 * OAuth 2.0 client credentials (RFC 6749 §4.4) against `POST {baseUrl}/oauth/token`: one token
 * at a time, shared by concurrent requests, renewed {@link TOKEN_RENEW_MS} before expiry or
 * after the api refused it.
 */
export class OAuthTokenSource {
  private current?: { token: string; expiresAt: number };
  private pending?: Promise<string>;

  constructor(
    private readonly baseUrl: string,
    private readonly client: { clientId: string; clientSecret: string; scope?: string },
    private readonly fetchImpl: typeof fetch,
  ) {}

  /** A valid access token; fetches one when there is none or it expires within 30 s. @throws PcpError when the token endpoint refuses. */
  async token(): Promise<string> {
    if (this.current && this.current.expiresAt - TOKEN_RENEW_MS > Date.now()) return this.current.token;
    this.pending ??= this.fetchToken().finally(() => (this.pending = undefined));
    return this.pending;
  }

  /** Forgets the token (the api answered 401 to it), so the next {@link token} fetches a new one. */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }

  private async fetchToken(): Promise<string> {
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.baseUrl}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ grant_type: 'client_credentials', client_id: this.client.clientId, client_secret: this.client.clientSecret, ...(this.client.scope ? { scope: this.client.scope } : {}) }),
      });
    } catch (cause) {
      throw new ConnectionError({ message: `token request failed: ${(cause as Error).message}`, status: 0, code: 'connection_error', requestId: '', cause });
    }
    const body = (await response.json().catch(() => undefined)) as { access_token?: string; expires_in?: number } | undefined;
    if (!response.ok || !body?.access_token) throw errorFromResponse(response, body);
    this.current = { token: body.access_token, expiresAt: Date.now() + (body.expires_in ?? 3600) * 1000 };
    return body.access_token;
  }
}

/** Sets the credential's header on `headers` and returns the bearer token used (for a 401 renewal), if OAuth. */
async function authorize(headers: Headers, credentials: Credentials | undefined, tokens: OAuthTokenSource | undefined): Promise<string | undefined> {
  if (!credentials) return undefined;
  if ('apiKey' in credentials) headers.set('X-Api-Key', credentials.apiKey);
  else if ('bearerToken' in credentials) headers.set('Authorization', `Bearer ${credentials.bearerToken}`);
  else {
    const token = await tokens!.token();
    headers.set('Authorization', `Bearer ${token}`);
    return token;
  }
  return undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The fetch the generated client calls: adds the credential, then sends the request, repeating
 * it (same method, URL, headers and body, so the same Idempotency-Key) on a network error, 429
 * or 503, and on 409 with `Retry-After` (the key's first request still running), when
 * {@link isRetryable}; waits `Retry-After` when given (up to `maxDelayMs`, else gives up at once),
 * else exponential backoff with full jitter. With OAuth, a 401 renews the token and repeats once
 * (any request: a 401 is answered before anything runs). Never retries other statuses.
 * @returns the final Response (error statuses included; the client turns them into typed errors).
 * @throws ConnectionError when no response arrived after the last attempt.
 */
export function retryingFetch(opts: { credentials?: Credentials; tokens?: OAuthTokenSource; retry?: RetryOptions; fetchImpl: typeof fetch }): (request: Request) => Promise<Response> {
  const maxRetries = opts.retry?.maxRetries ?? 2;
  const baseDelay = opts.retry?.baseDelayMs ?? 500;
  const maxDelay = opts.retry?.maxDelayMs ?? 20_000;
  return async (request: Request) => {
    const retryable = isRetryable(request);
    let renewed = false;
    for (let attempt = 0; ; attempt++) {
      const sent = request.clone();
      const token = await authorize(sent.headers, opts.credentials, opts.tokens);
      let response: Response | undefined;
      let failure: unknown;
      try {
        response = await opts.fetchImpl(sent);
      } catch (err) {
        failure = err;
      }
      if (response?.status === 401 && token && !renewed) {
        renewed = true;
        opts.tokens!.invalidate(token);
        attempt--;
        continue;
      }
      const again = retryable && attempt < maxRetries && (failure !== undefined || RETRY_STATUSES.has(response!.status) || (response!.status === 409 && response!.headers.has('retry-after')));
      if (!again) {
        if (response) return response;
        throw new ConnectionError({ message: `${request.method} ${request.url} failed: ${(failure as Error)?.message ?? String(failure)}`, status: 0, code: 'connection_error', requestId: '', cause: failure });
      }
      const backoff = Math.min(maxDelay, baseDelay * 2 ** attempt) * Math.random();
      const told = response ? retryAfterMs(response.headers, Date.now()) : undefined;
      if (told !== undefined && told > maxDelay) return response!;
      await response?.body?.cancel().catch(() => undefined);
      await sleep(told ?? backoff);
    }
  };
}
