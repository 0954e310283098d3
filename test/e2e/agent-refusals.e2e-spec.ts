import type { INestApplicationContext } from '@nestjs/common';
import { AgentsService } from '../../src/modules/agents/agents.service';
import { VerificationService } from '../../src/modules/verification/verification.service';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createPayee, pay, paymentRows, startRelayerWorker, TestAgent } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { createOrg } from '../support/factories';

/** Every refusal of an agent spend, one test each, in the order of docs/architecture.md §13, and the order itself. */
describe('agent spend refusals and validation (POST /payments)', () => {
  let t: TestApp;
  let off: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;
  let payee: { handle: string; address: string };

  beforeAll(async () => {
    t = await createTestApp();
    off = await createTestApp({ AGENTS_ENABLED: 'false' });
    chain = new TestChain();
    worker = await startRelayerWorker();
    payee = await createPayee(t, chain);
  });
  afterAll(async () => {
    await worker?.close();
    await off?.close();
    await t?.close();
    chain?.close();
  });

  const agents = () => t.app.get(AgentsService);
  async function refused(agent: TestAgent, body: Record<string, unknown>, app: TestApp = t) {
    const res = await pay(app, agent, { to: payee.handle, amount: '10.00', ...body });
    expect(res.status).toBe(403);
    expect(await paymentRows(t, agent.agentId)).toEqual([]);
    return res.body as { code: string; details?: Record<string, unknown> };
  }

  describe('in order', () => {
    it('agents_disabled: AGENTS_ENABLED=false refuses every spend; GET /agent and GET /balance still answer', async () => {
      const agent = await createAgent(t, chain, { float: 50n * USDC });
      expect(await refused(agent, {}, off)).toMatchObject({ code: 'agents_disabled' });
      expect((await off.http.get('/api/v1/agent').set('X-Api-Key', agent.key)).status).toBe(200);
      const balance = await off.http.get('/api/v1/balance').set('X-Api-Key', agent.key);
      expect(balance.status).toBe(200);
      expect(balance.body).toMatchObject({ onChainBalance: '50.00' });
    });

    it('agent_paused', async () => {
      const agent = await createAgent(t, chain, { float: 50n * USDC });
      await agents().setPaused(agent.agentId, true);
      expect(await refused(agent, {})).toMatchObject({ code: 'agent_paused' });
      await agents().setPaused(agent.agentId, false);
      expect((await pay(t, agent, { to: payee.handle, amount: '10.00' })).status).toBe(200);
    });

    it('signer_required', async () => {
      const agent = await createAgent(t, chain, { float: 50n * USDC, enable: false });
      expect(await refused(agent, {})).toMatchObject({ code: 'signer_required' });
    });

    it("kyb_rejected: a rejected organisation's agent may not spend (after signer_required, before the policy); reopen restores", async () => {
      const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { mode: 'mandate', dailyLimit: '100.00' } });
      const verification = t.app.get(VerificationService);
      await verification.decide(agent.organizationId, 'declined');
      expect(await refused(agent, {})).toMatchObject({ code: 'kyb_rejected' });
      await agents().setSignerEnabled(agent.agentId, false);
      expect(await refused(agent, {})).toMatchObject({ code: 'signer_required' });
      await agents().setSignerEnabled(agent.agentId, true);
      await verification.decide(agent.organizationId, 'reopen');
      expect(await refused(agent, {})).toMatchObject({ code: 'mandate_required' });
    });

    it('mandate_required: a policy in mandate mode with no mandate', async () => {
      const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { mode: 'mandate', dailyLimit: '100.00' } });
      expect(await refused(agent, {})).toMatchObject({ code: 'mandate_required' });
    });

    const day = 86_400_000;
    it.each([
      ['no_policy', null, '10.00', {}],
      ['not_yet_valid', { validFrom: new Date(Date.now() + day).toISOString() }, '10.00', {}],
      ['expired', { expiresAt: new Date(Date.now() - 1000).toISOString() }, '10.00', {}],
      ['recipient_not_allowed', { allowedRecipients: ['someone-else'] }, '10.00', {}],
      ['per_transaction_limit', { perTransactionMax: '5.00' }, '10.00', { limit: '5.00', requested: '10.00' }],
      ['daily_limit', { dailyLimit: '9.99' }, '10.00', { limit: '9.99', used: '0.00', requested: '10.00' }],
      ['monthly_limit', { dailyLimit: '100.00', monthlyLimit: '9.00' }, '10.00', { limit: '9.00', used: '0.00' }],
      ['approval_required', { approvalThreshold: '9.50' }, '10.00', { limit: '9.50' }],
      ['insufficient_balance', { dailyLimit: '1000.00' }, '60.00', { limit: '50.00', requested: '60.00' }],
    ] as const)('policy_denied %s', async (rule, policy, amount, details) => {
      const agent = await createAgent(t, chain, { float: 50n * USDC, policy: policy as never });
      const body = await refused(agent, { amount });
      expect(body).toMatchObject({ code: 'policy_denied', details: { rule, ...details } });
    });

    it('allowed recipients match a handle case-insensitively or the resolved address', async () => {
      const byHandle = await createAgent(t, chain, { float: 50n * USDC, policy: { allowedRecipients: [payee.handle.toUpperCase()] } });
      expect((await pay(t, byHandle, { to: payee.handle, amount: '1.00' })).status).toBe(200);
      const byAddress = await createAgent(t, chain, { float: 50n * USDC, policy: { allowedRecipients: [payee.address] } });
      expect((await pay(t, byAddress, { to: payee.handle, amount: '1.00' })).status).toBe(200);
    });

    it('when several apply, the first in order wins', async () => {
      // disabled beats paused, no signer, mandate and every policy rule
      const all = await createAgent(t, chain, { enable: false, policy: { mode: 'mandate', expiresAt: new Date(Date.now() - 1000).toISOString() } });
      await agents().setPaused(all.agentId, true);
      expect((await refused(all, {}, off)).code).toBe('agents_disabled');
      expect((await refused(all, {})).code).toBe('agent_paused');
      await agents().setPaused(all.agentId, false);
      expect((await refused(all, {})).code).toBe('signer_required');
      await agents().setSignerEnabled(all.agentId, true);
      expect((await refused(all, {})).code).toBe('mandate_required');
      // among policy rules: expired before recipient, per-transaction, daily
      const rules = await createAgent(t, chain, {
        policy: { expiresAt: new Date(Date.now() - 1000).toISOString(), allowedRecipients: ['nobody'], perTransactionMax: '1.00', dailyLimit: '1.00' },
      });
      expect((await refused(rules, {})).details).toMatchObject({ rule: 'expired' });
      await agents().setPolicy(rules.agentId, { allowedRecipients: ['nobody'], perTransactionMax: '1.00', dailyLimit: '1.00' });
      expect((await refused(rules, {})).details).toMatchObject({ rule: 'recipient_not_allowed' });
      await agents().setPolicy(rules.agentId, { perTransactionMax: '1.00', dailyLimit: '1.00', approvalThreshold: '0.50' });
      expect((await refused(rules, {})).details).toMatchObject({ rule: 'per_transaction_limit' });
      await agents().setPolicy(rules.agentId, { dailyLimit: '1.00', monthlyLimit: '1.00', approvalThreshold: '0.50' });
      expect((await refused(rules, {})).details).toMatchObject({ rule: 'daily_limit' });
      await agents().setPolicy(rules.agentId, { monthlyLimit: '1.00', approvalThreshold: '0.50' });
      expect((await refused(rules, {})).details).toMatchObject({ rule: 'monthly_limit' });
      await agents().setPolicy(rules.agentId, { approvalThreshold: '0.50' });
      expect((await refused(rules, {})).details).toMatchObject({ rule: 'approval_required' });
      await agents().setPolicy(rules.agentId, {});
      expect((await refused(rules, {})).details).toMatchObject({ rule: 'insufficient_balance' });
    });

    it('a refusal is stored under its Idempotency-Key: the retry gets the same answer even after the limit is raised', async () => {
      const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '5.00' } });
      const first = await pay(t, agent, { to: payee.handle, amount: '10.00' }, 'refused-once');
      expect(first.status).toBe(403);
      await agents().setPolicy(agent.agentId, { dailyLimit: '100.00' });
      const again = await pay(t, agent, { to: payee.handle, amount: '10.00' }, 'refused-once');
      expect(again.status).toBe(403);
      expect(again.body).toMatchObject({ code: 'policy_denied', details: first.body.details });
      expect((await pay(t, agent, { to: payee.handle, amount: '11.00' }, 'refused-once')).status).toBe(422);
      expect((await pay(t, agent, { to: payee.handle, amount: '10.00' }, 'fresh-key')).status).toBe(200);
    });
  });

  describe('validation (400) and credentials', () => {
    let agent: TestAgent;
    beforeAll(async () => {
      agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '1000000.00' } });
    });

    it.each([['0'], ['0.00'], ['-1.00'], ['1.1234567'], ['1e3'], ['1000000.000001'], [''], [12]])('amount %p → 400 invalid_request', async (amount) => {
      const res = await pay(t, agent, { to: payee.handle, amount });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
    });

    it('unknown payee → 400 (unknown_payee); an organisation without a payout address → 400 (no_payout_address)', async () => {
      const unknown = await pay(t, agent, { to: 'no-such-handle', amount: '1.00' });
      expect(unknown.status).toBe(400);
      expect(unknown.body).toMatchObject({ code: 'invalid_request', details: { reason: 'unknown_payee' } });
      const org = await createOrg(t.app);
      const [row] = await t.dataSource.query('SELECT handle FROM organizations WHERE id = $1', [org.organizationId]);
      const nowhere = await pay(t, agent, { to: row.handle, amount: '1.00' });
      expect(nowhere.status).toBe(400);
      expect(nowhere.body).toMatchObject({ details: { reason: 'no_payout_address' } });
    });

    it('Idempotency-Key required (400 idempotency_required); malformed key → 400', async () => {
      expect((await pay(t, agent, { to: payee.handle, amount: '1.00' }, null)).body.code).toBe('idempotency_required');
      expect((await pay(t, agent, { to: payee.handle, amount: '1.00' }, 'x'.repeat(129))).status).toBe(400);
    });

    it('a merchant key (which cannot hold agent:pay) and an agent key without agent:pay → 403 missing_scope; no payment', async () => {
      const org = await createOrg(t.app);
      const merchant = await t.http.post('/api/v1/payments').set('X-Api-Key', org.key).set('Idempotency-Key', 'm1').send({ to: payee.handle, amount: '1.00' });
      expect(merchant.status).toBe(403);
      expect(merchant.body).toMatchObject({ code: 'missing_scope', details: { required: ['agent:pay'] } });
      const readOnly = await createAgent(t, chain, { scopes: ['agent:balance:read'] });
      const res = await pay(t, readOnly, { to: payee.handle, amount: '1.00' });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'missing_scope' });
    });

    it('pays an agent slug into that agent’s signer', async () => {
      const other = await createAgent(t, chain);
      const res = await pay(t, agent, { to: other.slug, amount: '2.00' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ to: other.slug, toAddress: other.signerAddress });
    });
  });
});
