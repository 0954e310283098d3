/**
 * The console page's API client (docs/architecture.md §19): `/api/v1/*` through `@pcp/sdk` as a
 * `console` principal (the session cookie, `X-CSRF-Token`, and `X-Console-Organization` or
 * `X-Console-Agent` on every request), and the session routes `/console/api/*` (not in the OpenAPI
 * document) with the same headers. Errors are the SDK's {@link PcpError}.
 */
import { Pcp } from '../../../../../packages/sdk/src/client';
import { errorFromResponse, PcpError } from '../../../../../packages/sdk/src/errors';

export { PcpError };

const data = document.getElementById('page')!.dataset;

/** The console's headers: CSRF token and the organisation (or agent) the page acts for. */
function consoleHeaders(headers: Headers): void {
  if (data.csrf) headers.set('x-csrf-token', data.csrf);
  if (data.org) headers.set('x-console-organization', data.org);
  else if (data.consoleAgent) headers.set('x-console-agent', data.consoleAgent);
}

/** Same-origin fetch with the console's headers and the session cookie, never from the cache. */
const consoleFetch: typeof fetch = (input, init) => {
  const request = new Request(input, init);
  consoleHeaders(request.headers);
  return fetch(request, { credentials: 'same-origin', cache: 'no-store' });
};

/** The typed SDK client on this origin, as the signed-in owner. */
export const pcp = new Pcp({ baseUrl: location.origin, fetch: consoleFetch, retry: { maxRetries: 0 } });

/**
 * `method path` of the API through the SDK's client, for callers that build the path at run time
 * (JSON body in, 200 body out). @throws PcpError (its family's subclass) for any other answer.
 */
export async function call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const raw = pcp.raw as unknown as Record<string, (path: string, init: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }>>;
  const { data: json, error, response } = await raw[method.toUpperCase()](path, { body, headers });
  if (!response.ok) throw errorFromResponse(response, error);
  return (json ?? {}) as T;
}

/**
 * A session route `/console/api/*` (nonce, sign-in, sign-out, organisations): JSON in and out.
 * @throws PcpError for any answer but 2xx.
 */
export async function consoleCall<T>(method: 'GET' | 'POST', path: `/console/api/${string}`, body?: unknown): Promise<T> {
  const headers = new Headers({ accept: 'application/json' });
  if (body !== undefined) headers.set('content-type', 'application/json');
  const res = await consoleFetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const json: unknown = text ? JSON.parse(text) : {};
  if (!res.ok) throw errorFromResponse(res, json);
  return json as T;
}
