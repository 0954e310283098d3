import fc from 'fast-check';
import { canonicalJson, sha256Hex } from './fingerprint';

/**
 * Properties of the idempotency fingerprint (docs/architecture.md §5): the same request in any
 * key order gives the same fingerprint, and a different request gives a different one.
 */
describe('idempotency fingerprint properties', () => {
  const json = fc.jsonValue();

  /** The same value with object keys in reverse insertion order at every depth. */
  function reordered(v: unknown): unknown {
    if (Array.isArray(v)) return v.map(reordered);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reordered(x)]));
    return v;
  }

  it('is independent of object key order at every depth', () => {
    fc.assert(fc.property(json, (v) => sha256Hex(canonicalJson(v)) === sha256Hex(canonicalJson(reordered(v)))), { numRuns: 2000 });
  });

  it('canonical text parses back to an equal value (nothing is lost or merged)', () => {
    fc.assert(
      fc.property(json, (v) => {
        const normalised = JSON.parse(JSON.stringify(v)) as unknown; // -0 → 0, as JSON itself does
        expect(JSON.parse(canonicalJson(v))).toEqual(normalised);
      }),
      { numRuns: 2000 },
    );
  });

  it('distinct values give distinct canonical text', () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        const same = JSON.stringify(sortDeep(a)) === JSON.stringify(sortDeep(b));
        return same === (canonicalJson(a) === canonicalJson(b));
      }),
      { numRuns: 3000 },
    );
  });

  it('a value nested in a string is not confused with the value itself', () => {
    fc.assert(fc.property(json, (v) => canonicalJson({ a: v }) !== canonicalJson({ a: JSON.stringify(v) }) || typeof v === 'string'), { numRuns: 1000 });
  });
});

function sortDeep(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortDeep);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortDeep((v as Record<string, unknown>)[k])]));
  return v;
}
