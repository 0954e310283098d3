import type { INestApplicationContext } from '@nestjs/common';
import { hexlify, randomBytes, Wallet } from 'ethers';
import { AgentsService } from '../../src/modules/agents/agents.service';
import { ENABLE_SIGNER_TYPES, ownerDomain, WITHDRAW_TYPES } from '../../src/modules/agents/owner-messages';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createPayee, pay, startRelayerWorker, TestAgent } from '../support/agents';
import { TestChain, USDC } from '../support/chain';

/** GET /agent, GET /balance and the owner's EnableSigner and Withdraw signatures (docs/architecture.md §13). */
describe('agents: identity, balance, owner signatures', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    worker = await startRelayerWorker();
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    chain?.close();
  });

  const deadline = () => Math.floor(Date.now() / 1000) + 600;
  async function enableSig(agent: TestAgent, enabled: boolean, signer: Wallet = agent.owner, overrides: Partial<{ nonce: string; deadline: number; signerAddress: string }> = {}) {
    const nonce = overrides.nonce ?? hexlify(randomBytes(32));
    const dl = overrides.deadline ?? deadline();
    const signature = await signer.signTypedData(ownerDomain(31337), ENABLE_SIGNER_TYPES, { agentId: agent.agentId, signer: overrides.signerAddress ?? agent.signerAddress, enabled, nonce, deadline: dl });
    return { enabled, nonce, deadline: dl, signature };
  }
  async function withdrawSig(agent: TestAgent, amount: bigint, signer: Wallet = agent.owner) {
    const nonce = hexlify(randomBytes(32));
    const dl = deadline();
    const signature = await signer.signTypedData(ownerDomain(31337), WITHDRAW_TYPES, { agentId: agent.agentId, amount, nonce, deadline: dl });
    return { nonce, deadline: dl, signature };
  }

  it('GET /agent: identity, policy as decimal text, signer, usage; never the signer key', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { perTransactionMax: '25', dailyLimit: '100.5', allowedRecipients: [payee.handle], expiresAt: '2099-01-01T00:00:00Z' } });
    expect((await pay(t, agent, { to: payee.handle, amount: '10.00' })).status).toBe(200);
    const res = await t.http.get('/api/v1/agent').set('X-Api-Key', agent.key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: agent.agentId,
      slug: agent.slug,
      name: 'Test agent',
      organizationId: agent.organizationId,
      ownerAddress: agent.owner.address,
      paused: false,
      signer: { enabled: true, address: agent.signerAddress },
      policy: {
        perTransactionMax: '25.00',
        dailyLimit: '100.50',
        monthlyLimit: null,
        approvalThreshold: null,
        allowedRecipients: [payee.handle],
        mode: 'autonomous',
        validFrom: null,
        expiresAt: '2099-01-01T00:00:00.000Z',
      },
      usage: { usedToday: '10.00', usedThisMonth: '10.00' },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const [row] = await t.dataSource.query('SELECT signer_key_sealed FROM agents WHERE id = $1', [agent.agentId]);
    expect(row.signer_key_sealed).toMatch(/^v1\./);
    const signer = await t.app.get(AgentsService)['vault'].wallet(agent.agentId);
    expect(signer.address).toBe(agent.signerAddress);
    expect(JSON.stringify(res.body)).not.toContain(signer.privateKey.slice(2, 20));
    expect(row.signer_key_sealed).not.toContain(signer.privateKey.slice(2, 20));
  });

  it('GET /agent needs an agent key; GET /balance needs agent:balance:read', async () => {
    const agent = await createAgent(t, chain, { scopes: ['agent:pay'] });
    expect((await t.http.get('/api/v1/agent').set('X-Api-Key', agent.key)).status).toBe(200);
    const balance = await t.http.get('/api/v1/balance').set('X-Api-Key', agent.key);
    expect(balance.status).toBe(403);
    expect(balance.body.code).toBe('missing_scope');
    expect((await t.http.get('/api/v1/agent')).status).toBe(401);
  });

  it('GET /balance: signer and owner USDC from the chain, balance minus open reservations', async () => {
    const agent = await createAgent(t, chain, { float: 40n * USDC, ownerUsdc: 1000n * USDC });
    const res = await t.http.get('/api/v1/balance').set('X-Api-Key', agent.key);
    expect(res.body).toEqual({ address: agent.signerAddress, balance: '40.00', onChainBalance: '40.00', ownerAddress: agent.owner.address, ownerBalance: '960.00', currency: 'USDC' });
    // An open (pending) reservation is subtracted from `balance`, not from the on-chain figure.
    await t.dataSource.query(
      `INSERT INTO payments (id, agent_id, organization_id, idempotency_key, fingerprint, status, mode, to_handle, to_address, from_address, amount)
       VALUES (gen_random_uuid(), $1, $2, 'open-1', 'x', 'pending', 'instant', 'x', $3, $3, 15000000)`,
      [agent.agentId, agent.organizationId, agent.signerAddress],
    );
    const after = await t.http.get('/api/v1/balance').set('X-Api-Key', agent.key);
    expect(after.body).toMatchObject({ balance: '25.00', onChainBalance: '40.00' });
  });

  describe('owner EnableSigner (POST /agents/{id}/signer)', () => {
    it('the owner enables the signer; a replay, a stranger, another signer address and an expired deadline are refused', async () => {
      const agent = await createAgent(t, chain, { enable: false });
      const body = await enableSig(agent, true);
      const res = await t.http.post(`/api/v1/agents/${agent.agentId}/signer`).send(body);
      expect(res.status).toBe(200);
      expect(res.body.agent.signer).toEqual({ enabled: true, address: agent.signerAddress });
      const replay = await t.http.post(`/api/v1/agents/${agent.agentId}/signer`).send(body);
      expect(replay.status).toBe(400);
      expect(replay.body.details).toMatchObject({ reason: 'nonce_used' });

      const stranger = Wallet.createRandom();
      const byStranger = await t.http.post(`/api/v1/agents/${agent.agentId}/signer`).send(await enableSig(agent, false, stranger as unknown as Wallet));
      expect(byStranger.body.details).toMatchObject({ reason: 'bad_signature' });
      const otherSigner = await t.http.post(`/api/v1/agents/${agent.agentId}/signer`).send(await enableSig(agent, false, agent.owner, { signerAddress: stranger.address }));
      expect(otherSigner.body.details).toMatchObject({ reason: 'bad_signature' });
      const expired = await t.http.post(`/api/v1/agents/${agent.agentId}/signer`).send(await enableSig(agent, false, agent.owner, { deadline: Math.floor(Date.now() / 1000) - 1 }));
      expect(expired.body.details).toMatchObject({ reason: 'expired' });
      expect((await t.http.get('/api/v1/agent').set('X-Api-Key', agent.key)).body.signer.enabled).toBe(true);
    });

    it('disabling by signature sweeps the float back to the owner; spends then answer signer_required', async () => {
      const agent = await createAgent(t, chain, { float: 33n * USDC });
      const owner0 = await chain.usdcBalance(agent.owner.address);
      const res = await t.http.post(`/api/v1/agents/${agent.agentId}/signer`).send(await enableSig(agent, false));
      expect(res.status).toBe(200);
      expect(res.body.sweepTxHash).toMatch(/^0x[0-9a-f]{64}$/);
      expect(await chain.usdcBalance(agent.signerAddress)).toBe(0n);
      expect(await chain.usdcBalance(agent.owner.address)).toBe(owner0 + 33n * USDC);
      const payee = await createPayee(t, chain);
      expect((await pay(t, agent, { to: payee.handle, amount: '1.00' })).body.code).toBe('signer_required');
    });
  });

  describe('owner Withdraw (POST /agents/{id}/withdraw)', () => {
    it('an owner-signed withdrawal moves the float to the owner; a replayed one is refused and moves nothing', async () => {
      const agent = await createAgent(t, chain, { float: 50n * USDC });
      const owner0 = await chain.usdcBalance(agent.owner.address);
      const body = { amount: '20.00', ...(await withdrawSig(agent, 20n * USDC)) };
      const res = await t.http.post(`/api/v1/agents/${agent.agentId}/withdraw`).send(body);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ amount: '20.00', to: agent.owner.address, txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
      expect(await chain.usdcBalance(agent.signerAddress)).toBe(30n * USDC);
      expect(await chain.usdcBalance(agent.owner.address)).toBe(owner0 + 20n * USDC);
      const replay = await t.http.post(`/api/v1/agents/${agent.agentId}/withdraw`).send(body);
      expect(replay.status).toBe(400);
      expect(replay.body.details).toMatchObject({ reason: 'nonce_used' });
      expect(await chain.usdcBalance(agent.signerAddress)).toBe(30n * USDC);
    });

    it('works while the agent is paused (the float stays the owner’s); refuses a stranger, a changed amount and more than the float', async () => {
      const agent = await createAgent(t, chain, { float: 10n * USDC });
      await t.app.get(AgentsService).setPaused(agent.agentId, true);
      const stranger = Wallet.createRandom() as unknown as Wallet;
      const byStranger = await t.http.post(`/api/v1/agents/${agent.agentId}/withdraw`).send({ amount: '1.00', ...(await withdrawSig(agent, USDC, stranger)) });
      expect(byStranger.body.details).toMatchObject({ reason: 'bad_signature' });
      const changed = await t.http.post(`/api/v1/agents/${agent.agentId}/withdraw`).send({ amount: '2.00', ...(await withdrawSig(agent, USDC)) });
      expect(changed.body.details).toMatchObject({ reason: 'bad_signature' });
      const tooMuch = await t.http.post(`/api/v1/agents/${agent.agentId}/withdraw`).send({ amount: '11.00', ...(await withdrawSig(agent, 11n * USDC)) });
      expect(tooMuch.body.details).toMatchObject({ reason: 'insufficient_balance' });
      const all = await t.http.post(`/api/v1/agents/${agent.agentId}/withdraw`).send({ amount: '10.00', ...(await withdrawSig(agent, 10n * USDC)) });
      expect(all.status).toBe(200);
      expect(await chain.usdcBalance(agent.signerAddress)).toBe(0n);
    });
  });

  it('handles are one case-insensitive namespace: an agent slug cannot take an organisation handle', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain);
    await expect(t.app.get(AgentsService).create({ organizationId: agent.organizationId, slug: payee.handle, ownerAddress: agent.owner.address })).rejects.toMatchObject({
      code: 'invalid_request',
    });
  });
});
