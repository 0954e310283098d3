import { ANVIL_KEYS, anvilKey } from '@lib/chain';
import { Wallet } from 'ethers';
import { AppConfig } from './app-config';
import { validateEnv } from './env.schema';
import { PROCESS_SECRETS, SECRET_NAMES } from './secrets';

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
    ['MAX_AMOUNT', '1e6'],
    ['CHECKOUT_BASE_URL', 'not a url'],
    ['AUTH_FAILURES_PER_MINUTE', '0'],
    ['TRUSTED_PROXIES', 'not-an-address'],
    ['TRUSTED_PROXIES', '10.0.0.0/33'],
  ])('rejects %s=%s naming the variable', (name, value) => {
    expect(() => validateEnv({ [name]: value }, SECRET_NAMES)).toThrow(new RegExp(`${name}=`));
  });
});

describe('CONFIRMATIONS (DESIGN §18)', () => {
  it('defaults to 0 on the local chain and 2 on any other chain', () => {
    expect(validateEnv({}).CONFIRMATIONS).toBe(0);
    expect(validateEnv({ CHAIN_ID: '84532' }).CONFIRMATIONS).toBe(2);
  });

  it('refuses fewer than 1 outside chain 31337, naming the variable', () => {
    expect(() => validateEnv({ CHAIN_ID: '8453', CONFIRMATIONS: '0' })).toThrow(/CONFIRMATIONS=0: must be at least 1/);
    expect(validateEnv({ CHAIN_ID: '8453', CONFIRMATIONS: '1' }).CONFIRMATIONS).toBe(1);
    expect(validateEnv({ CHAIN_ID: '31337', CONFIRMATIONS: '0' }).CONFIRMATIONS).toBe(0);
  });
});

describe('TRUSTED_PROXIES', () => {
  it('defaults to loopback only', () => {
    expect(validateEnv({}).TRUSTED_PROXIES).toEqual(['loopback']);
  });
  it('takes a comma-separated list of addresses, CIDRs and the names Express knows', () => {
    expect(validateEnv({ TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.7,loopback, fd00::/8' }).TRUSTED_PROXIES).toEqual([
      '10.0.0.0/8',
      '192.168.1.7',
      'loopback',
      'fd00::/8',
    ]);
  });
});

/** Keys outside the local chain (docs/architecture.md §10). */
describe('secrets', () => {
  const fresh = () => Wallet.createRandom().privateKey;
  const live = (extra: Record<string, string> = {}) => ({
    CHAIN_ID: '8453',
    RELAYER_PRIVATE_KEY: fresh(),
    TERMS_SIGNER_PRIVATE_KEY: fresh(),
    ARBITER_PRIVATE_KEY: fresh(),
    DEPLOYER_PRIVATE_KEY: fresh(),
    SIGNER_ENCRYPTION_KEY: 'a-real-secret-of-at-least-32-characters-0123',
    OPERATOR_TOKEN: 'a-real-operator-token-0123456789',
    ...extra,
  });
  const errorOf = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('expected a refusal');
  };

  it('outside chain 31337 every key a process uses is required, named in the message', () => {
    for (const name of SECRET_NAMES) {
      const env: Record<string, string | undefined> = live();
      delete env[name];
      const message = errorOf(() => validateEnv(env, SECRET_NAMES));
      expect(message).toContain(name);
      expect(message).toMatch(/must be set/);
    }
  });

  it.each([
    ['RELAYER_PRIVATE_KEY', anvilKey('relayer')],
    ['TERMS_SIGNER_PRIVATE_KEY', anvilKey('termsSigner')],
    ['ARBITER_PRIVATE_KEY', anvilKey('arbiter')],
    ['RELAYER_PRIVATE_KEY', ANVIL_KEYS[0].toUpperCase().replace('0X', '0x')],
    ['ARBITER_PRIVATE_KEY', ANVIL_KEYS[9]],
    ['SIGNER_ENCRYPTION_KEY', 'dev-only-signer-encryption-key-change-me'],
    ['OPERATOR_TOKEN', 'dev-operator-token-change-me'],
  ])('outside chain 31337 a publicly known %s is refused, naming the variable and never printing the value', (name, value) => {
    const message = errorOf(() => validateEnv(live({ [name]: value }), SECRET_NAMES));
    expect(message).toContain(name);
    expect(message).toMatch(/publicly known/);
    expect(message.toLowerCase()).not.toContain(value.toLowerCase());
    expect(message.toLowerCase()).not.toContain(value.toLowerCase().replace(/^0x/, '').slice(0, 16));
  });

  it('an invalid secret value is refused without printing it', () => {
    const bad = '0xnot-a-key-but-a-secret-someone-pasted';
    const message = errorOf(() => validateEnv(live({ RELAYER_PRIVATE_KEY: bad, OPERATOR_TOKEN: 'short-secret' }), SECRET_NAMES));
    expect(message).toMatch(/RELAYER_PRIVATE_KEY/);
    expect(message).toMatch(/OPERATOR_TOKEN/);
    expect(message).not.toContain(bad);
    expect(message).not.toContain('short-secret');
  });

  it('an invalid DATABASE_URL is named without printing it (it may carry a password)', () => {
    const message = errorOf(() => validateEnv({ DATABASE_URL: 'mysql://admin:hunter2hunter2@db/x' }));
    expect(message).toContain('DATABASE_URL');
    expect(message).not.toContain('hunter2hunter2');
  });

  it('outside chain 31337, explicit fresh keys pass', () => {
    const source = live();
    const env = validateEnv(source, SECRET_NAMES);
    for (const name of SECRET_NAMES) expect(env[name]).toBe(source[name]);
  });

  it('on chain 31337 the development defaults still work (anvil roles, dev strings)', () => {
    const env = validateEnv({ CHAIN_ID: '31337' }, SECRET_NAMES);
    expect(env.RELAYER_PRIVATE_KEY).toBe(anvilKey('relayer'));
    expect(env.TERMS_SIGNER_PRIVATE_KEY).toBe(anvilKey('termsSigner'));
    expect(env.ARBITER_PRIVATE_KEY).toBe(anvilKey('arbiter'));
    expect(env.SIGNER_ENCRYPTION_KEY).toBe('dev-only-signer-encryption-key-change-me');
    expect(env.OPERATOR_TOKEN).toBe('dev-operator-token-change-me');
    expect(validateEnv({ CHAIN_ID: '31337', OPERATOR_TOKEN: 'dev-operator-token-change-me', RELAYER_PRIVATE_KEY: ANVIL_KEYS[7] }, SECRET_NAMES).RELAYER_PRIVATE_KEY).toBe(
      ANVIL_KEYS[7],
    );
  });

  it('a process loads only the keys it uses: the others are neither required, validated nor kept', () => {
    const env: Record<string, string> = live({ ARBITER_PRIVATE_KEY: 'garbage that is never read' });
    delete env.TERMS_SIGNER_PRIVATE_KEY;
    const relayerOnly = validateEnv(env, ['RELAYER_PRIVATE_KEY']);
    expect(relayerOnly.RELAYER_PRIVATE_KEY).toBe(env.RELAYER_PRIVATE_KEY);
    expect(relayerOnly.ARBITER_PRIVATE_KEY).toBeUndefined();
    expect(relayerOnly.TERMS_SIGNER_PRIVATE_KEY).toBeUndefined();
    expect(() => validateEnv(env, PROCESS_SECRETS.api)).toThrow(/TERMS_SIGNER_PRIVATE_KEY must be set/);
    expect(() => validateEnv(env, PROCESS_SECRETS.worker)).toThrow(/TERMS_SIGNER_PRIVATE_KEY must be set/);
  });

  it('which process uses which key', () => {
    expect([...PROCESS_SECRETS.api].sort()).toEqual(['OPERATOR_TOKEN', 'RELAYER_PRIVATE_KEY', 'SIGNER_ENCRYPTION_KEY', 'TERMS_SIGNER_PRIVATE_KEY']);
    // The worker signs FundingTerms when its payment sweep relays an agent escrow's funding again (docs/decisions.md "Keys per process").
    expect([...PROCESS_SECRETS.worker].sort()).toEqual(['OPERATOR_TOKEN', 'RELAYER_PRIVATE_KEY', 'SIGNER_ENCRYPTION_KEY', 'TERMS_SIGNER_PRIVATE_KEY']);
    expect([...PROCESS_SECRETS.api, ...PROCESS_SECRETS.worker]).not.toContain('ARBITER_PRIVATE_KEY');
  });

  it('AppConfig.secret() hands out only the keys its process loaded', () => {
    const env = live();
    const config = new AppConfig(env, { name: 'worker', secrets: PROCESS_SECRETS.worker });
    expect(config.secret('RELAYER_PRIVATE_KEY')).toBe(env.RELAYER_PRIVATE_KEY);
    expect(() => config.secret('ARBITER_PRIVATE_KEY')).toThrow('ARBITER_PRIVATE_KEY is not loaded by the worker process');
  });

  it('refuses the sandbox identity provider and the local verification address outside the local chain, and needs Stripe keys for stripe', () => {
    expect(validateEnv({}).IDENTITY_PROVIDER).toBe('sandbox');
    const api = (env: Record<string, string>) => new AppConfig(env, { name: 'api', secrets: [] });
    expect(() => api({ CHAIN_ID: '8453' })).toThrow(/IDENTITY_PROVIDER="sandbox": lets a person approve themselves/);
    expect(() => api({ CHAIN_ID: '8453', IDENTITY_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk_live_abc', STRIPE_WEBHOOK_SECRET: 'whsec_abc' })).toThrow(
      /VERIFICATION_ADDRESS: is the local-chain default/,
    );
    // Only the api acts on them: the worker, the CLI and migrations start without verification settings.
    expect(new AppConfig({ CHAIN_ID: '8453' }, { name: 'cli', secrets: [] }).env.IDENTITY_PROVIDER).toBe('sandbox');
    expect(validateEnv({ CHAIN_ID: '8453' }).CHAIN_ID).toBe(8453);
    expect(() => validateEnv({ IDENTITY_PROVIDER: 'stripe' })).toThrow(/STRIPE_SECRET_KEY=.*STRIPE_WEBHOOK_SECRET=/s);
    const live = validateEnv({
      CHAIN_ID: '8453',
      IDENTITY_PROVIDER: 'stripe',
      VERIFICATION_ADDRESS: '0x1111111111111111111111111111111111111111',
      STRIPE_SECRET_KEY: 'sk_live_abc',
      STRIPE_WEBHOOK_SECRET: 'whsec_abc',
    });
    expect(live.IDENTITY_PROVIDER).toBe('stripe');
    expect(api({ CHAIN_ID: '8453', IDENTITY_PROVIDER: 'stripe', VERIFICATION_ADDRESS: '0x1111111111111111111111111111111111111111', STRIPE_SECRET_KEY: 'sk_live_abc', STRIPE_WEBHOOK_SECRET: 'whsec_abc' }).env.CHAIN_ID).toBe(8453);
    expect(() => validateEnv({ STRIPE_API_BASE: 'not a url' })).toThrow(/STRIPE_API_BASE=/);
  });
});

/** The payment sweep must not resume a payment whose request may still be waiting on the relayer (issue 22, finding 9). */
describe('PAYMENT_SWEEP_IDLE_SECONDS against RELAYER_WAIT_MS', () => {
  it('by default the sweep waits longer than any request can (relayer wait and the RPC calls around it)', () => {
    const env = validateEnv({});
    expect(env.PAYMENT_SWEEP_IDLE_SECONDS * 1000).toBeGreaterThan(env.RELAYER_WAIT_MS + 2 * env.RPC_TIMEOUT_MS);
  });

  it.each([
    [{ RELAYER_WAIT_MS: '30000', PAYMENT_SWEEP_IDLE_SECONDS: '30' }],
    [{ RELAYER_WAIT_MS: '30000', PAYMENT_SWEEP_IDLE_SECONDS: '20' }],
    [{ RELAYER_WAIT_MS: '30000', RPC_TIMEOUT_MS: '5000', PAYMENT_SWEEP_IDLE_SECONDS: '40' }],
    [{ RELAYER_WAIT_MS: '120000' }],
  ])('refuses a sweep that could resume a payment its request still waits for: %j', (source) => {
    expect(() => validateEnv(source)).toThrow(/PAYMENT_SWEEP_IDLE_SECONDS=\d+: must be longer than RELAYER_WAIT_MS \+ 2 × RPC_TIMEOUT_MS/);
  });

  it('accepts a sweep strictly longer than the relayer wait plus two RPC timeouts', () => {
    expect(validateEnv({ RELAYER_WAIT_MS: '30000', RPC_TIMEOUT_MS: '5000', PAYMENT_SWEEP_IDLE_SECONDS: '41' }).PAYMENT_SWEEP_IDLE_SECONDS).toBe(41);
    expect(validateEnv({ RELAYER_WAIT_MS: '1000', RPC_TIMEOUT_MS: '500', PAYMENT_SWEEP_IDLE_SECONDS: '3' }).PAYMENT_SWEEP_IDLE_SECONDS).toBe(3);
  });
});
