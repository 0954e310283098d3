import { RelayIntentCheck, RelayIntentChecks } from './relay-intent-check';

const row = (purpose: string) => ({ id: 'r1', purpose, reference: 'ref', toAddress: '0x0000000000000000000000000000000000000001', data: '0x' });

describe('RelayIntentChecks (issue 29 finding 3: dead only on a confirming read)', () => {
  it("answers the registered check's verdict per purpose, and `unchecked` for a purpose without one", async () => {
    const checks = new RelayIntentChecks();
    const check: RelayIntentCheck = { purposes: ['payment', 'x402'], stillUsable: async (r) => (r.purpose === 'payment' ? 'dead' : 'usable') };
    checks.register(check);
    expect(await checks.judge(row('payment'))).toBe('dead');
    expect(await checks.judge(row('x402'))).toBe('usable');
    expect(await checks.judge(row('buyer-cancel'))).toBe('unchecked');
    expect(checks.has('payment')).toBe(true);
  });

  it('a check that throws is not proof either way: unknown', async () => {
    const checks = new RelayIntentChecks();
    checks.register({ purposes: ['refund'], stillUsable: () => Promise.reject(new Error('header not found')) });
    expect(await checks.judge(row('refund'))).toBe('unknown');
  });

  it('refuses a second check for a purpose', () => {
    const checks = new RelayIntentChecks();
    checks.register({ purposes: ['payment'], stillUsable: async () => 'usable' });
    expect(() => checks.register({ purposes: ['payment'], stillUsable: async () => 'dead' })).toThrow(/already has an intent check/);
  });
});
