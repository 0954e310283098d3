import { anvilKey } from '@lib/chain';
import { Wallet } from 'ethers';
import { freePort, startCompiled, stopProcess } from '../support/processes';
import { waitFor } from '../support/wait';

jest.setTimeout(120_000);

const fresh = () => Wallet.createRandom().privateKey;
/** Off the local chain, none of the five secrets set; each test adds the ones a process uses. */
const LIVE = {
  CHAIN_ID: '8453',
  // The api refuses the sandbox identity provider and the anvil verification address off the local chain.
  IDENTITY_PROVIDER: 'stripe',
  STRIPE_SECRET_KEY: 'sk_live_process_secrets_test',
  STRIPE_WEBHOOK_SECRET: 'whsec_process_secrets_test',
  VERIFICATION_ADDRESS: '0x1111111111111111111111111111111111111111',
  RELAYER_PRIVATE_KEY: undefined,
  TERMS_SIGNER_PRIVATE_KEY: undefined,
  ARBITER_PRIVATE_KEY: undefined,
  SIGNER_ENCRYPTION_KEY: undefined,
  OPERATOR_TOKEN: undefined,
};
const ENCRYPTION = 'an-encryption-key-of-our-own-0123456789';
const OPERATOR = 'an-operator-token-of-our-own-0123';

/** Each process loads only the keys it uses, and refuses publicly known ones off the local chain (docs/architecture.md §10). */
describe('keys per process (compiled api and worker)', () => {
  it('the api boots off the local chain with only its own keys (no arbiter key) and serves /metrics behind OPERATOR_TOKEN', async () => {
    const port = await freePort();
    const api = startCompiled('main.js', { ...LIVE, PORT: String(port), TERMS_SIGNER_PRIVATE_KEY: fresh(), RELAYER_PRIVATE_KEY: fresh(), SIGNER_ENCRYPTION_KEY: ENCRYPTION, OPERATOR_TOKEN: OPERATOR });
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health/live`).catch(() => null))?.status === 200, {
        label: 'api /health/live',
        describe: api.output,
      });
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
      expect((await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${OPERATOR}` } })).status).toBe(200);
    } finally {
      await stopProcess(api);
    }
  });

  it('the worker boots off the local chain with only the terms signer, relayer, encryption key and operator token', async () => {
    const port = await freePort();
    const worker = startCompiled('worker.js', {
      ...LIVE,
      WORKER_PORT: String(port),
      TERMS_SIGNER_PRIVATE_KEY: fresh(),
      RELAYER_PRIVATE_KEY: fresh(),
      SIGNER_ENCRYPTION_KEY: ENCRYPTION,
      OPERATOR_TOKEN: OPERATOR,
      ARBITER_PRIVATE_KEY: 'not even a key: the worker never reads it',
    });
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health/live`).catch(() => null))?.status === 200, {
        label: 'worker /health/live',
        describe: worker.output,
      });
    } finally {
      await stopProcess(worker);
    }
  });

  it('the api refuses to start with a published anvil relayer key or a missing terms signer, naming each and printing neither value', async () => {
    const relayer = anvilKey('relayer');
    const api = startCompiled('main.js', { ...LIVE, PORT: String(await freePort()), RELAYER_PRIVATE_KEY: relayer, SIGNER_ENCRYPTION_KEY: ENCRYPTION, OPERATOR_TOKEN: 'dev-operator-token-change-me' });
    expect(await api.exited).toBe(1);
    const out = api.output();
    expect(out).toMatch(/RELAYER_PRIVATE_KEY=<hidden>: is a publicly known value/);
    expect(out).toMatch(/TERMS_SIGNER_PRIVATE_KEY must be set/);
    expect(out).toMatch(/OPERATOR_TOKEN=<hidden>: is a publicly known value/);
    expect(out.toLowerCase()).not.toContain(relayer.slice(2, 20));
    expect(out).not.toContain('dev-operator-token-change-me');
  });

  it('the worker refuses to start without its relayer key off the local chain', async () => {
    const worker = startCompiled('worker.js', { ...LIVE, WORKER_PORT: String(await freePort()), TERMS_SIGNER_PRIVATE_KEY: fresh(), SIGNER_ENCRYPTION_KEY: ENCRYPTION, OPERATOR_TOKEN: OPERATOR });
    expect(await worker.exited).toBe(1);
    expect(worker.output()).toMatch(/RELAYER_PRIVATE_KEY must be set/);
    expect(worker.output()).not.toMatch(/TERMS_SIGNER_PRIVATE_KEY|ARBITER_PRIVATE_KEY/);
  });
});
