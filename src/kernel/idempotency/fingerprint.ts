import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/**
 * The JSON Canonicalization Scheme (RFC 8785, the `canonicalize` package): object keys sorted at
 * every depth, numbers and strings in ECMAScript form, so reordered keys give the same text.
 * Properties whose value is undefined are left out; `undefined` itself is `null`.
 */
export function canonicalJson(value: unknown): string {
  return canonicalize(value) ?? 'null';
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
