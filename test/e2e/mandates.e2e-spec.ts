import type { INestApplicationContext } from '@nestjs/common';
import { SDJwtInstance } from '@sd-jwt/core';
import { getBytes, hexlify, randomBytes as ethersRandom, SigningKey, Wallet } from 'ethers';
import { createHash, createPrivateKey, randomBytes, randomUUID, sign } from 'node:crypto';
import { INTENT_MANDATE_DOMAIN, INTENT_MANDATE_TYPES } from '../../src/modules/mandates/mandate-credential';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createPayee, pay, startRelayerWorker, TestAgent } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { expectError } from '../support/errors';

jest.setTimeout(120_000);

const CHAIN_ID = 31337;
const inOneDay = () => new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

interface Terms {
  payees: string[];
  maxAmountPerPayment: string;
  totalAmount: string;
  expiresAt: string;
  description: string;
}

/** The v0.1 EIP-712 profile signed by `signer` (the agent's owner unless a test says otherwise). */
async function eip712Credential(signer: Wallet, agent: TestAgent, terms: Terms, override: Record<string, unknown> = {}) {
  const message = {
    agent: agent.slug,
    payees: terms.payees,
    maxAmountPerPayment: terms.maxAmountPerPayment,
    totalAmount: terms.totalAmount,
    currency: 'USDC',
    expiresAt: terms.expiresAt,
    description: terms.description,
    nonce: hexlify(ethersRandom(32)),
    ...override,
  };
  const domain = { ...INTENT_MANDATE_DOMAIN, chainId: CHAIN_ID };
  const signature = await signer.signTypedData(domain, INTENT_MANDATE_TYPES, message);
  return { format: 'eip712', domain, types: INTENT_MANDATE_TYPES, primaryType: 'IntentMandate', message, signature, signer: signer.address, intentMandate: { natural_language_description: terms.description, merchants: terms.payees, intent_expiry: terms.expiresAt } };
}

/** An AP2 v0.2 mandate credential as an SD-JWT, ES256K under did:pkh with the owner's secp256k1 key in the header. */
async function sdJwtCredential(signer: Wallet, agent: TestAgent, terms: Terms, units: { max: bigint; total: bigint }, override: Record<string, unknown> = {}) {
  const pub = SigningKey.computePublicKey(signer.privateKey, false);
  const b64 = (hex: string) => Buffer.from(getBytes(hex)).toString('base64url');
  const jwk = { kty: 'EC', crv: 'secp256k1', x: b64('0x' + pub.slice(4, 68)), y: b64('0x' + pub.slice(68)) };
  const key = createPrivateKey({ key: { ...jwk, d: b64(signer.privateKey) }, format: 'jwk' });
  const sd = new SDJwtInstance({
    hasher: (data: string | ArrayBuffer) => new Uint8Array(createHash('sha256').update(typeof data === 'string' ? data : Buffer.from(data)).digest()),
    hashAlg: 'sha-256',
    signer: (data: string) => sign('sha256', Buffer.from(data), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url'),
    signAlg: 'ES256K',
    saltGenerator: (n: number) => randomBytes(n).toString('base64url'),
  });
  const payload = {
    iss: `did:pkh:eip155:${CHAIN_ID}:${signer.address}`,
    agent: agent.slug,
    payees: terms.payees,
    maxAmountPerPayment: units.max.toString(),
    totalAmount: units.total.toString(),
    currency: 'USDC',
    exp: Math.floor(Date.parse(terms.expiresAt) / 1000),
    nonce: randomUUID(),
    ...override,
  };
  const token = await sd.issue(payload, { _sd: ['payees', 'maxAmountPerPayment', 'totalAmount'] } as never, { header: { jwk } });
  return { format: 'sd-jwt', token };
}

/**
 * AP2 intent mandates (docs/architecture.md §13, §14): owner-signed credentials in two formats, the
 * mandate_required gate in mandate mode, mandateId on payments and the used amount under concurrency.
 */
describe('AP2 mandates', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    worker = await startRelayerWorker();
  });
  afterAll(async () => {
    chain?.close();
    await worker?.close();
    await t?.close();
  });

  const mandateAgent = () => createAgent(t, chain, { float: 500n * USDC, policy: { mode: 'mandate', dailyLimit: '1000.00' }, scopes: ['agent:pay', 'agent:balance:read', 'agent:escrow:fund', 'agent:mandate'] });
  const post = (agent: TestAgent, body: Record<string, unknown>) => t.http.post('/api/v1/mandates').set('X-Api-Key', agent.key).send(body);

  it('a valid v0.1 EIP-712 and a valid v0.2 SD-JWT mandate are stored and listed, active with usedAmount 0', async () => {
    const agent = await mandateAgent();
    const payee = await createPayee(t, chain);
    const terms = { payees: [payee.handle], maxAmountPerPayment: '25.00', totalAmount: '100.00', expiresAt: inOneDay(), description: 'Supplies' };
    const a = await post(agent, { ...terms, credential: await eip712Credential(agent.owner, agent, terms) });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ payees: [payee.handle], maxAmountPerPayment: '25.00', totalAmount: '100.00', usedAmount: '0.00', status: 'active' });
    const b = await post(agent, { ...terms, credential: await sdJwtCredential(agent.owner, agent, terms, { max: 25n * USDC, total: 100n * USDC }) });
    expect(b.status).toBe(200);
    expect(b.body.credential.format).toBe('sd-jwt');
    const list = await t.http.get('/api/v1/mandates').set('X-Api-Key', agent.key);
    expect(list.body.data.map((m: { id: string }) => m.id)).toEqual([b.body.id, a.body.id]);
    expect((await t.http.get(`/api/v1/mandates/${a.body.id}`).set('X-Api-Key', agent.key)).body.status).toBe('active');
  });

  it('tampered, signed by another key, expired, wrong terms or a reused nonce → 400 with the reason; nothing stored', async () => {
    const agent = await mandateAgent();
    const stranger = Wallet.createRandom();
    const terms = { payees: ['someone'], maxAmountPerPayment: '10.00', totalAmount: '50.00', expiresAt: inOneDay(), description: 'x' };
    const reason = async (body: Record<string, unknown>) => expectError(await post(agent, body), 400, 'invalid_request')?.reason;

    const good = await eip712Credential(agent.owner, agent, terms);
    expect(await reason({ ...terms, credential: { ...good, message: { ...good.message, totalAmount: '5000.00' } } })).toBe('terms_mismatch');
    expect(await reason({ ...terms, totalAmount: '5000.00', credential: { ...good, message: { ...good.message, totalAmount: '5000.00' } } })).toBe('bad_signature');
    expect(await reason({ ...terms, credential: await eip712Credential(stranger as unknown as Wallet, agent, terms) })).toBe('wrong_signer');
    expect(await reason({ ...terms, expiresAt: '2020-01-01T00:00:00Z', credential: good })).toBe('expired');
    expect(await reason({ ...terms, credential: { format: 'jwt', token: 'x' } })).toBe('unsupported_format');

    const sdGood = await sdJwtCredential(agent.owner, agent, terms, { max: 10n * USDC, total: 50n * USDC });
    const [jwt, ...rest] = sdGood.token.split('~');
    const [h, p, s] = jwt.split('.');
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), agent: 'other-agent' })).toString('base64url');
    expect(await reason({ ...terms, credential: { format: 'sd-jwt', token: [`${h}.${forged}.${s}`, ...rest].join('~') } })).toBe('bad_signature');
    expect(await reason({ ...terms, credential: await sdJwtCredential(stranger as unknown as Wallet, agent, terms, { max: 10n * USDC, total: 50n * USDC }) })).toBe('wrong_signer');
    expect(await reason({ ...terms, credential: await sdJwtCredential(agent.owner, agent, terms, { max: 10n * USDC, total: 99n * USDC }) })).toBe('terms_mismatch');

    expect((await post(agent, { ...terms, credential: good })).status).toBe(200);
    expect(await reason({ ...terms, credential: good })).toBe('nonce_used');
    expect((await t.http.get('/api/v1/mandates').set('X-Api-Key', agent.key)).body.data).toHaveLength(1);
  });

  it('mandate mode: 403 mandate_required unless an active mandate covers payee and amount; the payment records mandateId and usedAmount rises', async () => {
    const agent = await mandateAgent();
    const payee = await createPayee(t, chain);
    const other = await createPayee(t, chain);
    expectError(await pay(t, agent, { to: payee.handle, amount: '5.00' }), 403, 'mandate_required');
    const terms = { payees: [payee.handle], maxAmountPerPayment: '10.00', totalAmount: '15.00', expiresAt: inOneDay(), description: 'Lunch' };
    const mandate = (await post(agent, { ...terms, credential: await eip712Credential(agent.owner, agent, terms) })).body;
    expectError(await pay(t, agent, { to: other.handle, amount: '5.00' }), 403, 'mandate_required');
    expectError(await pay(t, agent, { to: payee.handle, amount: '10.01' }), 403, 'mandate_required');
    const paid = await pay(t, agent, { to: payee.handle, amount: '10.00' });
    expect(paid.status).toBe(200);
    expect(paid.body.mandateId).toBe(mandate.id);
    expect((await t.http.get(`/api/v1/payments/${paid.body.id}`).set('X-Api-Key', agent.key)).body.mandateId).toBe(mandate.id);
    expect((await t.http.get(`/api/v1/mandates/${mandate.id}`).set('X-Api-Key', agent.key)).body.usedAmount).toBe('10.00');
    expectError(await pay(t, agent, { to: payee.handle, amount: '6.00' }), 403, 'mandate_required'); // 10 + 6 > 15
    expect((await pay(t, agent, { to: payee.handle, amount: '5.00' })).status).toBe(200);
    expect((await t.http.get(`/api/v1/mandates/${mandate.id}`).set('X-Api-Key', agent.key)).body).toMatchObject({ usedAmount: '15.00', status: 'exhausted' });
  });

  it('ten concurrent 20.00 spends under a 100.00 mandate: exactly five succeed and usedAmount is 100.00', async () => {
    const agent = await mandateAgent();
    const payee = await createPayee(t, chain);
    const terms = { payees: [payee.handle], maxAmountPerPayment: '20.00', totalAmount: '100.00', expiresAt: inOneDay(), description: 'Race' };
    const mandate = (await post(agent, { ...terms, credential: await sdJwtCredential(agent.owner, agent, terms, { max: 20n * USDC, total: 100n * USDC }) })).body;
    const results = await Promise.all(Array.from({ length: 10 }, () => pay(t, agent, { to: payee.handle, amount: '20.00' })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 200, 403, 403, 403, 403, 403]);
    expect(results.filter((r) => r.status === 403).every((r) => r.body.code === 'mandate_required')).toBe(true);
    expect((await t.http.get(`/api/v1/mandates/${mandate.id}`).set('X-Api-Key', agent.key)).body.usedAmount).toBe('100.00');
  });

  it('the refusal order holds: a paused agent in mandate mode → agent_paused, not mandate_required; a key without agent:mandate cannot manage mandates', async () => {
    const agent = await mandateAgent();
    const payee = await createPayee(t, chain);
    await t.dataSource.query('UPDATE agents SET paused = true WHERE id = $1', [agent.agentId]);
    expectError(await pay(t, agent, { to: payee.handle, amount: '1.00' }), 403, 'agent_paused');
    const narrow = await createAgent(t, chain, { policy: { mode: 'mandate' } });
    expectError(await t.http.get('/api/v1/mandates').set('X-Api-Key', narrow.key), 403, 'missing_scope');
  });
});
