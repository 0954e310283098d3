import createClient, { type Client, type MaybeOptionalInit, type Middleware } from 'openapi-fetch';
import type { HttpMethod, PathsWithMethod, SuccessResponseJSON } from 'openapi-typescript-helpers';
import { ApiServerError, errorFromResponse } from './errors';
import type { paths } from './generated/openapi';
import { IDEMPOTENT_OPERATIONS } from './generated/operations';
import { type Credentials, OAuthTokenSource, type RetryOptions, retryingFetch } from './transport';
import { Webhooks } from './webhooks';

export type { paths, components, operations } from './generated/openapi';

/** Options of {@link Pcp}. */
export interface PcpOptions {
  /** The api's origin, e.g. `https://api.example.com` (paths carry `/api/v1`). */
  baseUrl: string;
  /** How to authenticate; omit for the public routes only. */
  credentials?: Credentials;
  /** Retries of idempotent requests (GET, or carrying an Idempotency-Key). */
  retry?: RetryOptions;
  /** The fetch to use (default `globalThis.fetch`). */
  fetch?: typeof fetch;
}

type Lower<M extends 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'> = Lowercase<M> & HttpMethod;
/** The paths that have method `M`. */
export type PathsFor<M extends 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'> = PathsWithMethod<paths, Lower<M>>;
/** Path and query parameters, headers and body of operation `M P`, as openapi-fetch takes them. */
export type RequestInit<M extends 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', P extends PathsFor<M>> = MaybeOptionalInit<paths[P], Lower<M>>;
/** The init argument of operation `M P`: optional when nothing in it is required. */
export type RequestArgs<M extends 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', P extends PathsFor<M>> = undefined extends RequestInit<M, P> ? [init?: NonNullable<RequestInit<M, P>>] : [init: RequestInit<M, P>];
/** The 200 body of operation `M P`. */
export type ResponseBody<M extends 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', P extends PathsFor<M>> = SuccessResponseJSON<paths[P][Lower<M>] & Record<string | number, unknown>>;

/** A list response (DESIGN §6): newest first, `nextCursor` is the id to pass as `starting_after`. */
interface ListPage<T> {
  data: T[];
  hasMore: boolean;
  nextCursor?: string | null;
}
/** GET paths answering a list page. */
export type ListPath = { [P in PathsFor<'GET'>]: ResponseBody<'GET', P> extends ListPage<unknown> ? P : never }[PathsFor<'GET'>];
/** The element type of list path `P`. */
export type ListItem<P extends ListPath> = ResponseBody<'GET', P> extends ListPage<infer T> ? T : never;

/**
 * The body's `idempotencyKey` (checkout create, DESIGN §5: the body twin of the header; both
 * present and different is a 400), if the request is JSON and names one.
 */
async function bodyIdempotencyKey(request: Request): Promise<string | undefined> {
  if (!request.body || !request.headers.get('content-type')?.includes('json')) return undefined;
  try {
    const body = (await request.clone().json()) as { idempotencyKey?: unknown };
    return typeof body?.idempotencyKey === 'string' ? body.idempotencyKey : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Adds an `Idempotency-Key` to every operation that takes one (generated from the document),
 * unless the caller set it: the body's `idempotencyKey` where there is one, else a random UUID.
 * The key is set once, before the transport, so the client's own retries repeat it.
 */
const idempotencyMiddleware: Middleware = {
  async onRequest({ request, schemaPath }) {
    if (!IDEMPOTENT_OPERATIONS.has(`${request.method} ${schemaPath}`) || request.headers.has('idempotency-key')) return undefined;
    request.headers.set('Idempotency-Key', (await bodyIdempotencyKey(request)) ?? globalThis.crypto.randomUUID());
    return request;
  },
};

/**
 * The payments control plane client (DESIGN §20). Operations are the api's OpenAPI document,
 * typed by path: `pcp.POST('/api/v1/checkout-sessions', { body })` resolves to the 200 body and
 * throws a typed {@link PcpError} subclass for any other answer. Money is decimal text everywhere
 * (`"12.50"`), never a number.
 *
 * - Every operation that takes an `Idempotency-Key` gets one (yours, or a new UUID), reused by
 *   the client's own retries.
 * - Reads and keyed writes are retried on network errors, 429 (honouring `Retry-After`) and 503.
 * - `list()` pages through a list route with `starting_after`.
 * - `webhooks.verify()` checks a delivery's Standard Webhooks signature.
 */
export class Pcp {
  /** The generated openapi-fetch client, for `{data, error, response}` without throwing. */
  readonly raw: Client<paths>;
  /** Webhook signature verification (Standard Webhooks). */
  readonly webhooks = new Webhooks();

  constructor(options: PcpOptions) {
    const baseUrl = options.baseUrl.replace(/\/+$/, '');
    const fetchImpl = options.fetch ?? globalThis.fetch;
    const credentials = options.credentials;
    const tokens = credentials && 'oauth' in credentials ? new OAuthTokenSource(baseUrl, credentials.oauth, fetchImpl) : undefined;
    this.raw = createClient<paths>({ baseUrl, fetch: retryingFetch({ credentials, tokens, retry: options.retry, fetchImpl }) });
    this.raw.use(idempotencyMiddleware);
  }

  /** `GET path`: the 200 body. @throws PcpError (its family's subclass) for any other answer. */
  GET<P extends PathsFor<'GET'>>(path: P, ...init: RequestArgs<'GET', P>): Promise<ResponseBody<'GET', P>> {
    return this.call('GET', path, init[0]);
  }
  /** `POST path`: the 200 body; an Idempotency-Key is added where the operation takes one. @throws PcpError */
  POST<P extends PathsFor<'POST'>>(path: P, ...init: RequestArgs<'POST', P>): Promise<ResponseBody<'POST', P>> {
    return this.call('POST', path, init[0]);
  }
  /** `PUT path`: the 200 body. @throws PcpError */
  PUT<P extends PathsFor<'PUT'>>(path: P, ...init: RequestArgs<'PUT', P>): Promise<ResponseBody<'PUT', P>> {
    return this.call('PUT', path, init[0]);
  }
  /** `PATCH path`: the 200 body; an Idempotency-Key is added where the operation takes one. @throws PcpError */
  PATCH<P extends PathsFor<'PATCH'>>(path: P, ...init: RequestArgs<'PATCH', P>): Promise<ResponseBody<'PATCH', P>> {
    return this.call('PATCH', path, init[0]);
  }

  /**
   * Every item of a list route, newest first, fetching pages lazily with `starting_after` (DESIGN
   * §6). `init.params.query.limit` is the page size; stop early with `break`.
   * @throws PcpError from any page.
   */
  async *list<P extends ListPath>(path: P, ...init: RequestArgs<'GET', P>): AsyncGenerator<ListItem<P>, void, undefined> {
    const base = (init[0] ?? {}) as { params?: { query?: Record<string, unknown> } };
    let cursor = base.params?.query?.starting_after as string | undefined;
    for (;;) {
      const query = { ...base.params?.query, ...(cursor ? { starting_after: cursor } : {}) };
      const page = (await this.call('GET', path, { ...base, params: { ...base.params, query } })) as ListPage<ListItem<P>>;
      for (const item of page.data) yield item;
      const last = page.data.at(-1) as { id?: string } | undefined;
      cursor = page.nextCursor ?? last?.id;
      if (!page.hasMore || !cursor) return;
    }
  }

  private async call(method: 'GET' | 'POST' | 'PUT' | 'PATCH', path: string, init: unknown): Promise<never> {
    const call = this.raw[method] as unknown as (path: string, init: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
    const { data, error, response } = await call(path, init ?? {});
    if (!response.ok) throw errorFromResponse(response, error);
    if (data === undefined) throw new ApiServerError({ message: `${method} ${path}: empty response`, status: response.status, code: 'internal', requestId: response.headers.get('x-request-id') ?? '', headers: response.headers });
    return data as never;
  }
}
