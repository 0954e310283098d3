/**
 * The console page's API client (docs/architecture.md §19): `/api/v1/*` through `@pcp/sdk` as a
 * `console` principal (the session cookie, `X-CSRF-Token`, and `X-Console-Organization` or
 * `X-Console-Agent` on every request), and the session routes `/console/api/*` (not in the OpenAPI
 * document) with the same headers. Every answer a page reads is typed: `/api/v1/*` by the SDK's
 * generated types (a renamed API field fails `npm run typecheck`), the session routes by the
 * server's own DTO classes. Errors are the SDK's {@link PcpError}.
 */
import { Pcp } from '../../../../../packages/sdk/src/client';
import { errorFromResponse, PcpError } from '../../../../../packages/sdk/src/errors';
import type { components } from '../../../../../packages/sdk/src/generated/openapi';
import type { ConsoleNonceDto, ConsoleOrganizationDto, ConsoleSessionDto, CreateOrganizationDto, SignedOutDto, SignInDto } from '../dto/console.dto';

export { PcpError };

/** The API's schemas (the SDK's generated OpenAPI types), by name: `Schemas['AgentDto']`. */
export type Schemas = components['schemas'];

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

/**
 * The typed SDK client on this origin, as the signed-in owner: `pcp.GET(path, {params})` resolves
 * to the operation's 200 body as the OpenAPI document types it. @throws PcpError for any other answer.
 */
export const pcp = new Pcp({ baseUrl: location.origin, fetch: consoleFetch, retry: { maxRetries: 0 } });

/** The session routes `/console/api/*` (console-session.controller.ts): body in, answer out, as the server's DTOs type them. */
interface SessionRoutes {
  'GET /console/api/nonce': { body: undefined; answer: ConsoleNonceDto };
  'POST /console/api/sign-in': { body: SignInDto; answer: ConsoleSessionDto };
  'POST /console/api/sign-out': { body: undefined; answer: SignedOutDto };
  'POST /console/api/organizations': { body: CreateOrganizationDto; answer: ConsoleOrganizationDto };
}

/**
 * A session route `/console/api/*` (nonce, sign-in, sign-out, organisations): JSON in and out.
 * @throws PcpError for any answer but 2xx.
 */
export async function consoleCall<R extends keyof SessionRoutes>(route: R, ...body: SessionRoutes[R]['body'] extends undefined ? [] : [SessionRoutes[R]['body']]): Promise<SessionRoutes[R]['answer']> {
  const [method, path] = route.split(' ');
  const headers = new Headers({ accept: 'application/json' });
  if (body.length) headers.set('content-type', 'application/json');
  const res = await consoleFetch(path, { method, headers, body: body.length ? JSON.stringify(body[0]) : undefined });
  const text = await res.text();
  const json: unknown = text ? JSON.parse(text) : {};
  if (!res.ok) throw errorFromResponse(res, json);
  return json as SessionRoutes[R]['answer'];
}
