import { expandScopes } from './auth/scopes';
import type { Principal } from './auth/principal';
import { accessRefusal } from './access';

const principal = (kind: Principal['kind'], granted: string[]): Principal => ({
  kind,
  credentialId: 'c',
  organizationId: 'o',
  agentId: kind === 'agent' ? 'a' : null,
  actor: kind,
  grantedScopes: granted,
  scopes: expandScopes(granted),
});

describe('accessRefusal (the one scope and credential-kind check, DESIGN §3, §17)', () => {
  it('admits a held scope (after write⇒read and :* expansion) of the right kind; no scopes = any credential', () => {
    expect(accessRefusal(principal('merchant', ['checkout:*']), { scopes: ['checkout:read'] })).toBeNull();
    expect(accessRefusal(principal('agent', ['agent:pay']), { scopes: ['agent:pay', 'agent:balance:read'], kinds: ['agent'] })).toBeNull();
    expect(accessRefusal(principal('oauth', []), { scopes: [] })).toBeNull();
  });

  it('refuses a missing scope first (403 missing_scope with required and granted), whatever the kind', () => {
    const e = accessRefusal(principal('merchant', ['checkout:read']), { scopes: ['agent:pay'], kinds: ['agent'] })!;
    expect([e.status, e.code, e.details]).toEqual([403, 'missing_scope', { required: ['agent:pay'], granted: ['checkout:read'] }]);
  });

  it('then the credential kind: agent_key_required, or merchant_credential_required naming the kinds allowed', () => {
    const agentOnly = accessRefusal(principal('merchant', []), { scopes: [], kinds: ['agent'] })!;
    expect([agentOnly.code, agentOnly.details]).toEqual(['forbidden', { reason: 'agent_key_required' }]);
    const merchantOnly = accessRefusal(principal('agent', ['agent:pay']), { scopes: [], kinds: ['merchant', 'oauth'] })!;
    expect([merchantOnly.code, merchantOnly.details]).toEqual(['forbidden', { reason: 'merchant_credential_required', allowed: ['merchant', 'oauth'] }]);
  });

  it("console-only operations: console_session_required for an API key; an agent owner's session (agentId set) only where consoleActs is agent-owner, else 404", () => {
    const byKey = accessRefusal(principal('merchant', ['checkout:*']), { scopes: [], kinds: ['console'] })!;
    expect([byKey.status, byKey.code, byKey.details]).toEqual([403, 'forbidden', { reason: 'console_session_required' }]);
    const agentOwner: Principal = { ...principal('console', []), agentId: 'a' };
    expect(accessRefusal(agentOwner, { scopes: [], kinds: ['console'], consoleActs: 'agent-owner' })).toBeNull();
    for (const access of [{ scopes: [], kinds: ['console' as const] }, { scopes: ['checkout:read' as const] }]) {
      const e = accessRefusal(agentOwner, access)!;
      expect([e.status, e.code]).toEqual([404, 'not_found']);
    }
    expect(accessRefusal(principal('console', ['checkout:*']), { scopes: [], kinds: ['console'] })).toBeNull();
  });
});
