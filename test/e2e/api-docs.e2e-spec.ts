import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createTestApp, TestApp } from '../support/app';

jest.setTimeout(30_000);

const root = path.resolve(__dirname, '../..');
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** The docs/api.md section listing routes kept out of the OpenAPI document on purpose (pages, probes, MCP). */
const OUTSIDE_OPENAPI = 'Pages and operations routes (outside the OpenAPI document)';

/**
 * The routes docs/api.md documents: every markdown table row whose first cell lists HTTP methods
 * (`GET, POST`) and whose second cell lists paths (`/a, /b`, backticks and `?query` ignored).
 * Rows of the "## Endpoints" table name paths under `/api/v1`; every other table names full paths.
 */
function documentedRoutes(markdown: string, skipSection?: string): Set<string> {
  const routes = new Set<string>();
  let section = '';
  for (const line of markdown.split('\n')) {
    if (line.startsWith('## ')) section = line.slice(3).trim();
    else if (line.startsWith('### ')) section = line.slice(4).trim();
    const cells = line.split('|').map((c) => c.trim());
    if (!line.startsWith('|') || cells.length < 4 || section === skipSection) continue;
    const methods = cells[1].split(',').map((m) => m.trim());
    if (!methods.every((m) => METHODS.includes(m))) continue;
    for (const raw of cells[2].split(',')) {
      const p = raw.trim().replace(/`/g, '').split(/[?\s]/)[0];
      if (!p.startsWith('/')) continue;
      const full = section === 'Endpoints' ? `/api/v1${p}` : p;
      for (const m of methods) routes.add(`${m} ${full}`);
    }
  }
  return routes;
}

/** docs/api.md and packages/sdk/openapi.json against the document the running api serves at /docs-json. */
describe('the served OpenAPI document, docs/api.md and the SDK', () => {
  let t: TestApp;
  let served: { paths: Record<string, Record<string, unknown>> };

  beforeAll(async () => {
    t = await createTestApp();
    const res = await t.http.get('/docs-json');
    expect(res.status).toBe(200);
    served = res.body;
  });
  afterAll(() => t.close());

  it('docs/api.md documents every route of /docs-json (method and path)', () => {
    const documented = documentedRoutes(readFileSync(path.join(root, 'docs/api.md'), 'utf8'));
    const served_ = Object.entries(served.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    expect(served_.length).toBeGreaterThan(50);
    expect(served_.filter((r) => !documented.has(r))).toEqual([]);
  });

  it('packages/sdk/openapi.json, which the SDK is generated from, is the document the api serves (else: npm run sdk:generate)', () => {
    const committed = JSON.parse(readFileSync(path.join(root, 'packages/sdk/openapi.json'), 'utf8'));
    expect(served).toEqual(committed);
  });

  it('money is decimal text in every schema: no number-typed amount, price, fee, total, balance, budget or *Limit (the page `limit` is a count)', () => {
    const numeric: string[] = [];
    const walk = (node: unknown, at: string) => {
      if (!node || typeof node !== 'object') return;
      const schema = node as { type?: string; properties?: Record<string, unknown>; in?: string; name?: string; schema?: unknown };
      const fields = { ...schema.properties, ...(schema.in && schema.name ? { [schema.name]: schema.schema } : {}) };
      for (const [name, prop] of Object.entries(fields)) {
        const type = (prop as { type?: string } | undefined)?.type;
        if ((type === 'number' || type === 'integer') && (/amount|price|fee|total|balance|budget|float/i.test(name) || /Limit/.test(name))) numeric.push(`${at}.${name}`);
      }
      for (const [k, v] of Object.entries(node)) walk(v, `${at}.${k}`);
    };
    walk((served as unknown as { components: unknown }).components, 'components');
    walk(served.paths, 'paths');
    expect(numeric).toEqual([]);
  });

  it('every schema property is typed: no bare `type: object` (what Nest writes for a `string | null` or `unknown` field without `type`)', () => {
    const bare: string[] = [];
    const schemas = (served as unknown as { components: { schemas: Record<string, { properties?: Record<string, Record<string, unknown>> }> } }).components.schemas;
    for (const [name, schema] of Object.entries(schemas)) {
      for (const [prop, p] of Object.entries(schema.properties ?? {})) {
        if (p.type === 'object' && !p.properties && !p.additionalProperties && !p.allOf && !p.oneOf && !p.anyOf && `${name}.${prop}` !== 'ErrorBody.details') bare.push(`${name}.${prop}`);
      }
    }
    expect(bare).toEqual([]);
  });

  it('docs/api.md documents no route the api does not serve', () => {
    const servedRoutes = new Set(Object.entries(served.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)));
    const extra = [...documentedRoutes(readFileSync(path.join(root, 'docs/api.md'), 'utf8'), OUTSIDE_OPENAPI)].filter((r) => !servedRoutes.has(r));
    expect(extra).toEqual([]);
  });
});

