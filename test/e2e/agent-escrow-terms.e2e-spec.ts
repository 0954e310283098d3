import type { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { escrowKeyFromId } from '@lib/chain';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createSeller, settleUntil, startRelayerWorker, TestAgent } from '../support/agents';
import { indexUntilStatus, pollToHead, getCheckout, TestChain, USDC } from '../support/chain';
import { expectError } from '../support/errors';

/**
 * An agent escrow's checkout is funded by the agent's session signer only (docs/architecture.md §18,
 * issue 22 findings 4 and 11): its funding terms are signed for that buyer alone, and a funding by
 * anyone else (terms signed before this rule) is flagged by the ledger, never mirrored onto the checkout.
 */
describe('agent escrow checkouts: funding terms for the agent signer only', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext | undefined;

  beforeAll(async () => {
    // Short broadcast wait: the first test opens an agent escrow while no relayer worker runs.
    t = await createTestApp({ RELAYER_WAIT_MS: '1000' });
    chain = new TestChain();
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    chain?.close();
  });

  const seller = () => createSeller(t, chain);
  const open = (agent: TestAgent, body: Record<string, unknown>) =>
    t.http.post('/api/v1/agent-escrows').set('X-Api-Key', agent.key).set('Idempotency-Key', `esc-${randomUUID()}`).send(body);
  const termsFor = (checkoutId: string, buyer: string) => t.http.get(`/api/v1/checkout-sessions/${checkoutId}/funding-terms`).query({ buyer });

  it('a stranger funding the checkout with terms signed for them (as before this rule) is flagged: buyer mismatch, the checkout stays open', async () => {
    const s = await seller();
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '100.00' } });
    const created = await open(agent, { to: s.handle, amount: '10.00', description: 'Report', escrowTemplateId: 'digital' });
    expect(created.status).toBe(200);
    const checkoutId = created.body.checkoutSessionId as string;
    const stranger = await chain.wallet({ usdc: 10n * USDC });
    const session = await getCheckout(t, s.org, checkoutId);
    const terms = {
      escrowKey: escrowKeyFromId(checkoutId),
      buyer: stranger.address,
      seller: s.wallet.address,
      amount: 10n * USDC,
      inspectionWindow: 72 * 3600,
      deadline: Math.floor(new Date(session.expiresAt as string).getTime() / 1000),
    };
    const signature = await chain.gateway.signFundingTerms(chain.termsSigner, terms, Number(process.env.CHAIN_ID));
    await chain.fundWithAuthorization(stranger, terms, signature);
    await pollToHead(t, chain);
    const [escrow] = await t.dataSource.query('SELECT flag, flag_details FROM escrows WHERE escrow_key = $1', [terms.escrowKey.toLowerCase()]);
    expect(escrow.flag).toBe('terms_mismatch');
    expect(escrow.flag_details.mismatches).toContainEqual({ field: 'buyer', expected: agent.signerAddress, actual: stranger.address });
    expect(await getCheckout(t, s.org, checkoutId)).toMatchObject({ status: 'open', escrowId: null });
  });

  it('funding terms (API and pay page relay) for anyone but the agent signer → 400; the signer gets them and the agent escrow funds', async () => {
    worker = await startRelayerWorker();
    const s = await seller();
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '100.00' } });
    const created = await open(agent, { to: s.handle, amount: '12.00', description: 'Logo', escrowTemplateId: 'digital' });
    expect(created.status).toBe(200);
    const checkoutId = created.body.checkoutSessionId as string;
    const stranger = await chain.wallet({ usdc: 20n * USDC, eth: false });
    expect(expectError(await termsFor(checkoutId, stranger.address), 400, 'invalid_request')).toMatchObject({ reason: 'buyer_not_allowed' });
    expect(expectError(await t.http.get(`/checkout/${checkoutId}/funding`).query({ buyer: stranger.address }), 400, 'invalid_request')).toMatchObject({ reason: 'buyer_not_allowed' });
    const own = await termsFor(checkoutId, agent.signerAddress);
    expect(own.status).toBe(200);
    expect(own.body.terms.buyer).toBe(agent.signerAddress);
    const funded = await indexUntilStatus(t, s.org, checkoutId, 'funded');
    const [escrow] = await t.dataSource.query('SELECT buyer_address, flag FROM escrows WHERE id = $1', [funded.escrowId]);
    expect(escrow).toEqual({ buyer_address: agent.signerAddress, flag: null });
    await settleUntil(t, async () => (await t.http.get(`/api/v1/agent-escrows/${created.body.id}`).set('X-Api-Key', agent.key)).body.status === 'succeeded');
    expect(await chain.usdcBalance(stranger.address)).toBe(20n * USDC);
  });
});
