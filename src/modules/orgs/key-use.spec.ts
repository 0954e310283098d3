import type { Principal } from '../../kernel/auth/principal';
import type { OrgsRepository } from './orgs.repository';
import { KEY_USE_INTERVAL_MS, OrgsService } from './orgs.service';

/** The write budget of an API key's "last used" (docs/decisions.md "API key last used"). */
describe('OrgsService.used', () => {
  const touched: string[] = [];
  let failNext = false;
  const repo = {
    touchApiKey: async (id: string) => {
      if (failNext) {
        failNext = false;
        throw new Error('connection lost');
      }
      touched.push(id);
    },
  } as unknown as OrgsRepository;
  const service = new OrgsService(repo, null as never, null as never, null as never, null as never);
  const key = (kind: Principal['kind'], credentialId: string): Principal =>
    ({ kind, credentialId, organizationId: 'o1', agentId: null, actor: kind, grantedScopes: [], scopes: new Set() }) as unknown as Principal;
  let now = 1_000_000;
  beforeEach(() => {
    touched.length = 0;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
  });
  afterEach(() => jest.restoreAllMocks());

  it('writes a key at most once per interval, each key on its own clock; never OAuth tokens or console sessions', async () => {
    await service.used(key('merchant', 'k1'));
    await service.used(key('merchant', 'k1'));
    await service.used(key('agent', 'k2'));
    await service.used(key('oauth', 't1'));
    await service.used(key('console', 's1'));
    expect(touched).toEqual(['k1', 'k2']);
    now += KEY_USE_INTERVAL_MS - 1;
    await service.used(key('merchant', 'k1'));
    expect(touched).toEqual(['k1', 'k2']);
    now += 1;
    await service.used(key('merchant', 'k1'));
    expect(touched).toEqual(['k1', 'k2', 'k1']);
  });

  it('a failed write does not fail the request, and the next request tries again', async () => {
    failNext = true;
    await expect(service.used(key('merchant', 'k3'))).resolves.toBeUndefined();
    expect(touched).toEqual([]);
    await service.used(key('merchant', 'k3'));
    expect(touched).toEqual(['k3']);
  });
});
