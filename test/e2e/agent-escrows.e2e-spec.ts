import { randomUUID } from 'node:crypto';
import { escrowKeyFromId } from '@lib/chain';
import type { TestApp } from '../support/app';
import { createAgent, createSeller, settleUntil, useAgentStack, TestAgent } from '../support/agents';
import { checkoutEvents, indexUntilStatus, TestChain, USDC } from '../support/chain';
import type { TestOrg } from '../support/factories';

/** Agent escrows (docs/architecture.md §13): the signer as buyer, funded gaslessly, acted on through signed EscrowActions. */
describe('agent escrows (POST /agent-escrows)', () => {
  let t: TestApp;
  let chain: TestChain;
  useAgentStack({}, (s) => ({ t, chain } = s));

  const seller = () => createSeller(t, chain);
  const open = (agent: TestAgent, body: Record<string, unknown>, key = `esc-${randomUUID()}`) =>
    t.http.post('/api/v1/agent-escrows').set('X-Api-Key', agent.key).set('Idempotency-Key', key).send(body);
  const agentAct = (agent: TestAgent, id: string, action: string, body: Record<string, unknown> = {}, key = `act-${randomUUID()}`) =>
    t.http.post(`/api/v1/agent-escrows/${id}/${action}`).set('X-Api-Key', agent.key).set('Idempotency-Key', key).send(body);
  async function sellerReports(s: { wallet: Awaited<ReturnType<TestChain['wallet']>>; org: TestOrg }, escrowId: string, checkoutId: string, action: 'accept' | 'markDelivered', path: string) {
    const txHash = await chain.gateway.act(s.wallet, action, escrowKeyFromId(checkoutId));
    const res = await t.http.post(`/api/v1/escrows/${escrowId}/${path}`).set('X-Api-Key', s.org.key).send({ txHash });
    expect(res.status).toBe(200);
    return res.body;
  }

  it('create → funded on chain with the signer as buyer → seller accepts and marks delivered → the agent releases through its route; the seller gets the checkout.* events', async () => {
    const s = await seller();
    const agent = await createAgent(t, chain, { float: 100n * USDC, policy: { dailyLimit: '100.00' } });
    const signerEth = await chain.provider.getBalance(agent.signerAddress);
    const created = await open(agent, { to: s.handle, amount: '25.00', description: 'Logo design', escrowTemplateId: 'digital' });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ status: 'submitted', to: s.handle, toAddress: s.wallet.address, buyerAddress: agent.signerAddress, amount: '25.00', escrowStatus: 'open' });
    const checkoutId = created.body.checkoutSessionId as string;

    const funded = await indexUntilStatus(t, s.org, checkoutId, 'funded');
    const escrowId = funded.escrowId as string;
    await settleUntil(t, async () => (await t.http.get(`/api/v1/agent-escrows/${created.body.id}`).set('X-Api-Key', agent.key)).body.status === 'succeeded');
    expect(await chain.gateway.getOnChainEscrow(escrowKeyFromId(checkoutId))).toMatchObject({ state: 'funded', buyer: agent.signerAddress, seller: s.wallet.address, amount: 25n * USDC });
    expect(await chain.provider.getBalance(agent.signerAddress)).toBe(signerEth);
    const agentView = await t.http.get(`/api/v1/agent-escrows/${created.body.id}`).set('X-Api-Key', agent.key);
    expect(agentView.body).toMatchObject({ buyerAddress: agent.signerAddress, toAddress: s.wallet.address, escrowId, escrowKey: escrowKeyFromId(checkoutId), escrowStatus: 'funded' });
    const sellerView = await t.http.get(`/api/v1/escrows/${escrowId}`).set('X-Api-Key', s.org.key);
    expect(sellerView.body).toMatchObject({ status: 'funded', role: 'seller', checkoutSessionId: checkoutId });
    expect((await t.http.get('/api/v1/agent').set('X-Api-Key', agent.key)).body.usage.usedToday).toBe('25.00');

    await sellerReports(s, escrowId, checkoutId, 'accept', 'accept');
    await sellerReports(s, escrowId, checkoutId, 'markDelivered', 'mark-delivered');

    const noConfirm = await agentAct(agent, created.body.id, 'release');
    expect(noConfirm.status).toBe(400);
    expect(noConfirm.body.code).toBe('confirm_required');
    const seller0 = await chain.usdcBalance(s.wallet.address);
    const released = await agentAct(agent, created.body.id, 'release', { confirm: true }, 'release-1');
    expect(released.status).toBe(200);
    expect(released.body).toMatchObject({ escrow: { escrowStatus: 'released', escrowId }, txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await chain.usdcBalance(s.wallet.address)).toBe(seller0 + 25n * USDC);
    const receipt = await chain.provider.getTransactionReceipt(released.body.txHash);
    expect(receipt!.from).toBe(chain.relayer.address);
    expect(chain.gateway.decodeLogs(receipt!.logs)).toEqual([expect.objectContaining({ action: 'released', by: agent.signerAddress })]);
    const replay = await agentAct(agent, created.body.id, 'release', { confirm: true }, 'release-1');
    expect(replay.body.txHash).toBe(released.body.txHash);

    const types = (await checkoutEvents(t, checkoutId)).map((e) => e.type);
    expect(types).toEqual(['checkout.funded', 'checkout.accepted', 'checkout.released', 'checkout.paid']);
    const sellerAfter = await t.http.get(`/api/v1/escrows/${escrowId}`).set('X-Api-Key', s.org.key);
    expect(sellerAfter.body.status).toBe('released');
  });

  it('cancel before acceptance refunds the signer; a later release is refused 409; dispute needs an accepted escrow', async () => {
    const s = await seller();
    const agent = await createAgent(t, chain, { float: 50n * USDC });
    const created = await open(agent, { to: s.handle, amount: '10.00', description: 'Widget' });
    await indexUntilStatus(t, s.org, created.body.checkoutSessionId, 'funded');
    expect(await chain.usdcBalance(agent.signerAddress)).toBe(40n * USDC);
    const early = await agentAct(agent, created.body.id, 'dispute', { confirm: true });
    expect(early.status).toBe(409);
    expect(early.body.details).toMatchObject({ status: 'funded', allowed: ['accepted', 'delivered'] });
    const cancelled = await agentAct(agent, created.body.id, 'cancel');
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.escrow.escrowStatus).toBe('cancelled');
    expect(await chain.usdcBalance(agent.signerAddress)).toBe(50n * USDC);
    const late = await agentAct(agent, created.body.id, 'release', { confirm: true });
    expect(late.status).toBe(409);
    expect((await checkoutEvents(t, created.body.checkoutSessionId)).map((e) => e.type)).toEqual(['checkout.funded', 'checkout.cancelled']);
    // An agent escrow is a one-shot payment: unlike a buyer's checkout, its cancel does not reopen it.
    const [row] = await t.dataSource.query('SELECT status, escrow_attempt FROM checkout_sessions WHERE id = $1', [created.body.checkoutSessionId]);
    expect(row).toEqual({ status: 'cancelled', escrow_attempt: 0 });
  });

  it('follows the spend refusals and the policy; pays organisations only; needs agent:escrow:fund', async () => {
    const s = await seller();
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '15.00' } });
    expect((await open(agent, { to: s.handle, amount: '10.00', description: 'a' })).status).toBe(200);
    const over = await open(agent, { to: s.handle, amount: '10.00', description: 'b' });
    expect(over.status).toBe(403);
    expect(over.body).toMatchObject({ code: 'policy_denied', details: { rule: 'daily_limit', used: '10.00' } });
    const other = await createAgent(t, chain);
    const toAgent = await open(agent, { to: other.slug, amount: '1.00', description: 'c' });
    expect(toAgent.status).toBe(400);
    expect(toAgent.body.details).toMatchObject({ reason: 'not_an_organization' });
    const noScope = await createAgent(t, chain, { scopes: ['agent:pay'] });
    expect((await open(noScope, { to: s.handle, amount: '1.00', description: 'd' })).body.code).toBe('missing_scope');
    const missingKey = await t.http.post('/api/v1/agent-escrows').set('X-Api-Key', agent.key).send({ to: s.handle, amount: '1.00', description: 'e' });
    expect(missingKey.body.code).toBe('idempotency_required');
    const list = await t.http.get('/api/v1/agent-escrows').set('X-Api-Key', agent.key);
    expect(list.body.data).toHaveLength(1);
  });
});
