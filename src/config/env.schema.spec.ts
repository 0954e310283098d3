import { validateEnv } from './env.schema';

describe('validateEnv', () => {
  it('applies the documented defaults to an empty environment', () => {
    const env = validateEnv({});
    expect(env.PORT).toBe(3000);
    expect(env.AGENTS_ENABLED).toBe(true);
    expect(env.IDEMPOTENCY_TTL_HOURS).toBe(24);
    expect(env.WEBHOOK_RETRY_SCALE).toBe(1);
  });

  it('coerces numbers and booleans from text', () => {
    const env = validateEnv({ PORT: '8080', AGENTS_ENABLED: 'false', WEBHOOK_RETRY_SCALE: '0.001' });
    expect(env.PORT).toBe(8080);
    expect(env.AGENTS_ENABLED).toBe(false);
    expect(env.WEBHOOK_RETRY_SCALE).toBe(0.001);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['AGENTS_ENABLED', 'yes'],
    ['DATABASE_URL', 'mysql://x'],
    ['USDC_ADDRESS', '0x123'],
    ['RELAYER_PRIVATE_KEY', 'nope'],
    ['MAX_AMOUNT', '1e6'],
    ['CHECKOUT_BASE_URL', 'not a url'],
  ])('rejects %s=%s naming the variable', (name, value) => {
    expect(() => validateEnv({ [name]: value })).toThrow(new RegExp(`${name}=`));
  });

  it('refuses the sandbox identity provider and the local verification address outside the local chain, and needs Stripe keys for stripe', () => {
    expect(validateEnv({}).IDENTITY_PROVIDER).toBe('sandbox');
    expect(() => validateEnv({ CHAIN_ID: '8453' })).toThrow(/IDENTITY_PROVIDER="sandbox": lets a person approve themselves/);
    expect(() => validateEnv({ CHAIN_ID: '8453', IDENTITY_PROVIDER: 'stripe' })).toThrow(/VERIFICATION_ADDRESS=.*local-chain default/);
    expect(() => validateEnv({ IDENTITY_PROVIDER: 'stripe' })).toThrow(/STRIPE_SECRET_KEY=.*STRIPE_WEBHOOK_SECRET=/s);
    const live = validateEnv({
      CHAIN_ID: '8453',
      IDENTITY_PROVIDER: 'stripe',
      VERIFICATION_ADDRESS: '0x1111111111111111111111111111111111111111',
      STRIPE_SECRET_KEY: 'sk_live_abc',
      STRIPE_WEBHOOK_SECRET: 'whsec_abc',
    });
    expect(live.IDENTITY_PROVIDER).toBe('stripe');
    expect(() => validateEnv({ STRIPE_API_BASE: 'not a url' })).toThrow(/STRIPE_API_BASE=/);
  });
});
