import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import * as OpenAPISampler from 'openapi-sampler';

/**
 * Schema-driven API fuzzing in the manner of Schemathesis, from npm parts: requests are
 * generated from our own OpenAPI document (`/docs-json`), valid ones by sampling each
 * operation's schemas and invalid ones by fast-check mutations, and every response is checked:
 * no 5xx, a status the document lists for the operation, and a body that validates against the
 * documented schema for that status (docs/decisions.md, "API fuzzing").
 */

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = Record<string, unknown>;

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: Schema;
}

interface Operation {
  operationId?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
  security?: unknown[];
  'x-required-scopes'?: string[];
  'x-agent-key'?: boolean;
}

export interface OpenApiDoc {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

/** One operation of the document: `GET /api/v1/checkout-sessions/{id}`. */
export interface FuzzOperation {
  method: string;
  path: string;
  op: Operation;
  /** `method path`, for reports. */
  label: string;
}

/** A request ready to send: the path with parameters filled in, query, headers and body. */
export interface FuzzRequest {
  kind: 'valid' | 'invalid';
  /** What was done to the request (the mutation's name, or `sample`). */
  variant: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  /** Raw body text (already serialised), or undefined for none. */
  body?: string;
}

/** What a response broke, if anything. */
export interface FuzzFinding {
  label: string;
  variant: string;
  status: number;
  problem: 'server_error' | 'undocumented_status' | 'schema_mismatch';
  detail: string;
  request: FuzzRequest;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** mulberry32: a small seeded PRNG, so a failing run can be repeated with its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every operation of the document, in path order. */
export function operationsOf(doc: OpenApiDoc): FuzzOperation[] {
  const out: FuzzOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) out.push({ method: method.toUpperCase(), path, op, label: `${method.toUpperCase()} ${path}` });
    }
  }
  return out;
}

/** The JSON request body schema of an operation, if it takes one. */
function bodySchema(op: Operation): Schema | undefined {
  return op.requestBody?.content?.['application/json']?.schema;
}

/** Resolves a local `$ref` one level (enough for Nest's component schemas). */
function deref(doc: OpenApiDoc, schema: Schema | undefined): Schema | undefined {
  const ref = schema?.$ref;
  if (typeof ref !== 'string') return schema;
  const name = ref.replace('#/components/schemas/', '');
  return doc.components?.schemas?.[name];
}

function sample(doc: OpenApiDoc, schema: Schema | undefined): Json {
  if (!schema) return null;
  return OpenAPISampler.sample(schema as never, { skipReadOnly: true, quiet: true }, doc as never) as Json;
}

/** Context the generator needs: credentials per kind, and ids that exist (so not every GET is a 404). */
export interface FuzzContext {
  /** Credential for an operation (by its required scopes); undefined sends none. */
  credentialFor(op: FuzzOperation): string | undefined;
  /** A real id to use for a path parameter of this path, when one is known. */
  knownId?(path: string, param: string): string | undefined;
}

function fillPath(path: string, values: Record<string, string>): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? randomUUID()));
}

function queryString(values: Record<string, string>): string {
  const entries = Object.entries(values);
  return entries.length ? '?' + entries.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&') : '';
}

function baseHeaders(ctx: FuzzContext, fop: FuzzOperation, body: boolean): Record<string, string> {
  const headers: Record<string, string> = {};
  const credential = ctx.credentialFor(fop);
  if (credential) headers['x-api-key'] = credential;
  if (body) headers['content-type'] = 'application/json';
  if (['POST', 'PUT', 'PATCH'].includes(fop.method)) headers['idempotency-key'] = `fuzz-${randomUUID()}`;
  return headers;
}

/**
 * A valid request for the operation: path parameters from known ids (else random UUIDs), each
 * query parameter sampled from its schema (optional ones dropped at random), the body sampled
 * from its schema with optional properties dropped at random.
 */
export function validRequest(doc: OpenApiDoc, fop: FuzzOperation, ctx: FuzzContext, rng: () => number): FuzzRequest {
  const pathValues: Record<string, string> = {};
  const query: Record<string, string> = {};
  for (const p of fop.op.parameters ?? []) {
    if (p.in === 'path') pathValues[p.name] = ctx.knownId?.(fop.path, p.name) ?? randomUUID();
    if (p.in === 'query' && (p.required || rng() < 0.5)) {
      const v = sample(doc, p.schema);
      if (v !== null && v !== undefined && p.name !== 'starting_after') query[p.name] = typeof v === 'string' ? v : JSON.stringify(v);
    }
  }
  const schema = bodySchema(fop.op);
  let body: string | undefined;
  if (schema) {
    const value = sample(doc, schema);
    const required = new Set((deref(doc, schema)?.required as string[] | undefined) ?? []);
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      for (const key of Object.keys(value)) if (!required.has(key) && rng() < 0.3) delete value[key];
      delete value.idempotencyKey;
    }
    body = JSON.stringify(value);
  }
  return {
    kind: 'valid',
    variant: 'sample',
    method: fop.method,
    url: fillPath(fop.path, pathValues) + queryString(query),
    headers: baseHeaders(ctx, fop, body !== undefined),
    body,
  };
}

const nasty: Array<[string, Json]> = [
  ['nul', 'a\u0000b'],
  ['lone_surrogate', '\ud800x'],
  ['huge_string', 'x'.repeat(60_000)],
  ['emoji', '💸'.repeat(100)],
  ['negative', -1],
  ['float', 0.1],
  ['big_number', 1e308],
  ['bool', true],
  ['null', null],
  ['array', [1, 'a', null]],
  ['object', { a: { b: [] } }],
  ['empty', ''],
  ['sql', "' OR 1=1 --"],
  ['exponent', '1e5'],
];

function deepNesting(depth: number): Json {
  let v: Json = 'leaf';
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { n: v };
  return v;
}

/** fast-check arbitrary of one mutation of a valid request (wrong types, missing or extra fields, odd strings, bad headers). */
function mutationArb(doc: OpenApiDoc, fop: FuzzOperation): fc.Arbitrary<(r: FuzzRequest) => FuzzRequest> {
  const schema = deref(doc, bodySchema(fop.op));
  const props = Object.keys((schema?.properties as Record<string, unknown> | undefined) ?? {});
  const required = (schema?.required as string[] | undefined) ?? [];
  const withBody = (name: string, f: (b: Record<string, Json>) => Json) => (r: FuzzRequest): FuzzRequest => {
    let parsed: Json = {};
    try {
      parsed = r.body ? (JSON.parse(r.body) as Json) : {};
    } catch {
      parsed = {};
    }
    const obj = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
    return { ...r, variant: name, body: JSON.stringify(f(obj)), headers: { ...r.headers, 'content-type': 'application/json' } };
  };
  const arbs: Array<fc.Arbitrary<(r: FuzzRequest) => FuzzRequest>> = [
    fc.constantFrom(...nasty).map(([name, value]) => withBody(`body_is_${name}`, () => value)),
    fc.integer({ min: 50, max: 400 }).map((depth) => withBody('deep_nesting', (b) => ({ ...b, nested: deepNesting(depth) }))),
    fc.string({ maxLength: 30 }).map((key) => withBody('extra_field', (b) => ({ ...b, [`x_${key}`]: 'extra' }))),
    fc.constant((r: FuzzRequest): FuzzRequest => ({ ...r, variant: 'malformed_json', body: '{"a":', headers: { ...r.headers, 'content-type': 'application/json' } })),
    fc.constant((r: FuzzRequest): FuzzRequest => ({ ...r, variant: 'text_plain', body: 'amount=1', headers: { ...r.headers, 'content-type': 'text/plain' } })),
    fc.constant((r: FuzzRequest): FuzzRequest => ({ ...r, variant: 'oversized_body', body: JSON.stringify({ pad: 'x'.repeat(120_000) }), headers: { ...r.headers, 'content-type': 'application/json' } })),
    fc
      .constantFrom('\u0001bad', 'k'.repeat(129), 'white space', 'ünïcode')
      .map((key) => (r: FuzzRequest): FuzzRequest => ({ ...r, variant: 'bad_idempotency_key', headers: { ...r.headers, 'idempotency-key': key } })),
    fc
      .constantFrom('Basic abc', 'Bearer', 'Bearer a b', 'bearer ' + 'z'.repeat(500))
      .map((value) => (r: FuzzRequest): FuzzRequest => ({ ...r, variant: 'bad_authorization', headers: { ...r.headers, authorization: value } })),
    fc
      .constantFrom('not-a-uuid', '..%2f..%2fetc', '%00', 'ffffffff-ffff-ffff-ffff-ffffffffffff', "1' OR '1'='1")
      .map((seg) => (r: FuzzRequest): FuzzRequest => ({ ...r, variant: 'bad_path_param', url: fop.path.includes('{') ? fop.path.replace(/\{[^}]+\}/g, encodeURIComponent(seg)) : r.url })),
    fc
      .record({ limit: fc.oneof(fc.constantFrom('0', '101', '-1', '1.5', 'abc', ''), fc.integer().map(String)), starting_after: fc.oneof(fc.constant('nope'), fc.uuid()) })
      .map((q) => (r: FuzzRequest): FuzzRequest => ({ ...r, variant: 'bad_query', url: r.url.split('?')[0] + queryString(q) })),
  ];
  if (props.length > 0) {
    arbs.push(
      fc.tuple(fc.constantFrom(...props), fc.constantFrom(...nasty)).map(([prop, [name, value]]) => withBody(`field_${name}`, (b) => ({ ...b, [prop]: value }))),
    );
  }
  if (required.length > 0) {
    arbs.push(
      fc.constantFrom(...required).map((prop) =>
        withBody('missing_required', (b) => {
          const copy = { ...b };
          delete copy[prop];
          return copy;
        }),
      ),
    );
  }
  return fc.oneof(...arbs);
}

/** `count` invalid requests for the operation, each a valid one with one mutation applied. */
export function invalidRequests(doc: OpenApiDoc, fop: FuzzOperation, ctx: FuzzContext, count: number, seed: number): FuzzRequest[] {
  const rng = seededRandom(seed);
  return fc.sample(mutationArb(doc, fop), { numRuns: count, seed }).map((mutate) => ({ ...mutate(validRequest(doc, fop, ctx, rng)), kind: 'invalid' as const }));
}

/**
 * Checks responses against the document: status < 500, listed among the operation's responses
 * (429 and 401 are allowed wherever the document lists them), and the JSON body valid against
 * that response's schema.
 */
export class ResponseChecker {
  private readonly ajv: Ajv;
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(private readonly doc: OpenApiDoc) {
    this.ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: 'doc', components: rewriteRefs(doc.components ?? {}) });
  }

  check(fop: FuzzOperation, req: FuzzRequest, status: number, bodyText: string): FuzzFinding | null {
    const finding = (problem: FuzzFinding['problem'], detail: string): FuzzFinding => ({ label: fop.label, variant: req.variant, status, problem, detail, request: req });
    if (status >= 500) return finding('server_error', bodyText.slice(0, 300));
    const responses = fop.op.responses ?? {};
    const documented = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
    if (!documented) return finding('undocumented_status', `documented: ${Object.keys(responses).join(', ')}; body ${bodyText.slice(0, 200)}`);
    const schema = documented.content?.['application/json']?.schema;
    if (!schema) return null;
    let body: unknown;
    try {
      body = JSON.parse(bodyText);
    } catch {
      return finding('schema_mismatch', `not JSON: ${bodyText.slice(0, 100)}`);
    }
    const key = `${fop.label} ${status}`;
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile(rewriteRefs(schema) as Schema);
      this.validators.set(key, validate);
    }
    if (validate(body)) return null;
    return finding('schema_mismatch', this.ajv.errorsText(validate.errors) + ` body ${bodyText.slice(0, 200)}`);
  }
}

/**
 * Points `#/components/...` references at the document registered under `$id: doc`, and reads
 * OpenAPI 3.0's `nullable: true` as "this schema, or null" (ajv honours `nullable` only beside a
 * `type`, while Nest writes it beside `allOf: [{$ref}]` for nullable objects).
 */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value && typeof value === 'object') {
    const { nullable, ...rest } = value as Record<string, unknown>;
    if (nullable === true) return { anyOf: [rewriteRefs(rest), { type: 'null' }] };
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `doc${v}` : rewriteRefs(v)]),
    );
  }
  return value;
}
