/** Every scope a credential may hold (docs/architecture.md §3). */
export const SCOPES = [
  'checkout:read', 'checkout:write', 'invoices:read', 'invoices:write', 'offerings:read', 'offerings:write',
  'escrow:read', 'escrow:write', 'verification:read', 'verification:write', 'webhooks:read', 'webhooks:write',
  'agent:balance:read', 'agent:pay', 'agent:escrow:fund', 'agent:mandate',
  'refund:read', 'refund:write',
  // DESIGN §21: the organisation's ledger (GET /balance-transactions); read-only, so `balance:*` grants it alone.
  'balance:read',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Scopes a merchant key may hold (every non-agent scope). */
export const MERCHANT_SCOPES: readonly Scope[] = SCOPES.filter((s) => !s.startsWith('agent:'));
/** Scopes an agent key may hold: agent spend scopes plus read scopes of the merchant resources. */
export const AGENT_SCOPES: readonly Scope[] = SCOPES.filter((s) => s.startsWith('agent:') || s.endsWith(':read'));

const RESOURCES = new Set(SCOPES.filter((s) => !s.startsWith('agent:')).map((s) => s.split(':')[0]));

/**
 * Validates granted scope strings: each is a known scope or `X:*` for a merchant resource X.
 * @returns the list of invalid entries (empty when all are valid).
 */
export function invalidScopes(granted: readonly string[]): string[] {
  return granted.filter((s) => {
    const [resource, action] = s.split(':');
    if (action === '*' && s.split(':').length === 2) return !RESOURCES.has(resource);
    return !(SCOPES as readonly string[]).includes(s);
  });
}

/**
 * Expands granted scopes into the effective set: `X:*` grants `X:read` and `X:write`; `X:write`
 * implies `X:read` (docs/architecture.md §3).
 */
export function expandScopes(granted: readonly string[]): Set<Scope> {
  const out = new Set<Scope>();
  for (const s of granted) {
    const [resource, action] = s.split(':');
    if (action === '*' && RESOURCES.has(resource)) {
      for (const action of ['read', 'write']) if ((SCOPES as readonly string[]).includes(`${resource}:${action}`)) out.add(`${resource}:${action}` as Scope);
    } else if ((SCOPES as readonly string[]).includes(s)) {
      out.add(s as Scope);
      if (action === 'write') out.add(`${resource}:read` as Scope);
    }
  }
  return out;
}
