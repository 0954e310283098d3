import { randomUUID } from 'node:crypto';
import { escrowKeyFromId } from '@lib/chain';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { ExactEvmScheme as ClientExactEvmScheme } from '@x402/evm/exact/client';
import { hexlify, randomBytes } from 'ethers';
import { privateKeyToAccount } from 'viem/accounts';
import { RelayerService } from '../../src/chain/relayer/relayer.service';
import { AgentsService } from '../../src/modules/agents/agents.service';
import { ownerDomain, WITHDRAW_TYPES } from '../../src/modules/agents/owner-messages';
import { EscrowIndexer } from '../../src/modules/escrow/escrow-indexer.service';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { PaymentFaultPoint, PaymentFaults } from '../../src/modules/payments/payments.service';
import { createTestApp, type TestApp } from '../support/app';
import { createAgent, createPayee, createSeller, pay, paymentRows, settleUntil, TestAgent, useAgentStack } from '../support/agents';
import { createCheckout, createParties, fundOnChain, indexUntilStatus, TestChain, USDC } from '../support/chain';
import { FaultSwitch } from '../support/faults';
import { relayIntentProbe } from '../support/relay-intent';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

/**
 * Issue 29 finding 1, per caller (DESIGN §22 "One live relay per intent"): every caller that relays
 * keys its intent by something stable across retries (the payment id, the settlement row, the escrow
 * and action, the owner's nonce, the agent's sweep), so a retry, a second pass or a second replica
 * resumes the live relayer row instead of relaying again. Mining is stopped while the copies arrive,
 * so each finds the first still unmined, as on a public chain; then one block is mined and the
 * outcome checked: one relayer row for the intent, one transaction of it in the pool, the money moved once.
 */
describe('one live relay per intent, per caller (issue 29 finding 1)', () => {
  let t: TestApp;
  let chain: TestChain;
  let base: string;
  const faults = new FaultSwitch<PaymentFaultPoint>();
  // Short chain waits: a caller that waits for its relay to be mined gives up (pending) quickly while mining is stopped.
  useAgentStack(
    { overrides: [{ provide: PaymentFaults, useValue: faults }], env: { CHAIN_WAIT_MS: '1000', X402_RECEIPT_WAIT_MS: '300', X402_MIN_AMOUNT: '0.01' }, listen: 'named', chainTime: true },
    (s) => ({ t, chain, base } = s),
  );
  const probe = relayIntentProbe(
    () => t,
    () => chain,
  );
  afterEach(async () => {
    faults.at = null;
    await probe.automine(true);
  });

  /** Mines what the pool holds (mining back on). */
  const mineAll = async () => {
    await probe.automine(true);
    await chain.mine();
  };
  /** A payment left signed and unrelayed, as a crash between "signed" and "broadcast" leaves it (500 answered). */
  async function signedUnrelayed(agent: TestAgent, to: string, amount: string) {
    faults.at = 'after_signed';
    expect((await pay(t, agent, { to, amount })).status).toBe(500);
    faults.at = null;
    const [p] = await paymentRows(t, agent.agentId);
    expect(p).toMatchObject({ status: 'pending', auth_nonce: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    return p;
  }

  it('A2A payment-submitted: the same taskId again and again (same and other keys, concurrent) while the transfer is unmined → one relayer row, one transfer', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
    const taskId = `task-${randomUUID()}`;
    const submit = (key: string) =>
      t.http.post('/api/v1/a2a/payment-submitted').set('X-Api-Key', agent.key).set('Idempotency-Key', key).send({ jsonrpc: '2.0', id: 1, method: 'payment-submitted', params: { to: payee.handle, amount: '3.00', taskId } });
    await probe.automine(false);
    const first = await submit('a2a-first');
    expect(first.status).toBe(200);
    expect(first.body.result.payment.status).toBe('submitted');
    const paymentId = first.body.result.payment.id as string;
    for (let i = 0; i < 3; i++) expect((await submit(i === 0 ? 'a2a-first' : `a2a-${randomUUID()}`)).body.result.payment.id).toBe(paymentId);
    const copies = await Promise.all(Array.from({ length: 6 }, (_, i) => submit(i % 2 ? 'a2a-first' : `a2a-${randomUUID()}`)));
    for (const c of copies) if (c.status === 200) expect(c.body.result.payment.id).toBe(paymentId);
    const [p] = await paymentRows(t, agent.agentId);
    expect(await probe.rows('payment', paymentId)).toHaveLength(1);
    expect(await probe.pooledWith(p.auth_nonce!)).toBe(1);
    await mineAll();
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect(await chain.usdcBalance(payee.address)).toBe(3n * USDC);
    expect(await paymentRows(t, agent.agentId)).toHaveLength(1);
  });

  describe('x402', () => {
    const challenge = (to: string, amount: string) => fetch(`${base}/api/v1/x402/challenge?to=${to}&amount=${amount}`);

    it('POST /x402/settle: same-key retries (sequential and concurrent) while the transfer is unmined → one relayer row, one transfer', async () => {
      const payee = await createPayee(t, chain);
      const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
      const paymentRequired = (await challenge(payee.handle, '2.00')).headers.get('payment-required')!;
      const key = `x402-${randomUUID()}`;
      const settle = () => t.http.post('/api/v1/x402/settle').set('X-Api-Key', agent.key).set('Idempotency-Key', key).send({ paymentRequired });
      await probe.automine(false);
      const first = await settle();
      expect(first.status).toBe(200);
      expect(first.body.settlement.success).toBe(false);
      const paymentId = first.body.payment.id as string;
      for (let i = 0; i < 3; i++) expect((await settle()).body.payment.id).toBe(paymentId);
      const copies = await Promise.all(Array.from({ length: 5 }, () => settle()));
      for (const c of copies) expect([200, 409]).toContain(c.status);
      const [p] = await paymentRows(t, agent.agentId);
      expect(await probe.rows('payment', paymentId)).toHaveLength(1);
      expect(await probe.pooledWith(p.auth_nonce!)).toBe(1);
      await mineAll();
      await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
      expect((await settle()).body.settlement).toMatchObject({ success: true });
      expect(await chain.usdcBalance(payee.address)).toBe(2n * USDC);
    });

    it('the paid retry of a challenge: the same PAYMENT-SIGNATURE again and again while the transfer is unmined → one relayer row, one transfer; then 200 once', async () => {
      const payee = await createPayee(t, chain);
      const payer = await chain.wallet({ usdc: 5n * USDC, eth: false });
      const url = `${base}/api/v1/x402/challenge?to=${payee.handle}&amount=1.00`;
      const client = new x402Client().register('eip155:31337', new ClientExactEvmScheme(privateKeyToAccount(payer.privateKey as `0x${string}`))).setSpendControls(false);
      const payload = await client.createPaymentPayload(decodePaymentRequiredHeader((await challenge(payee.handle, '1.00')).headers.get('payment-required')!));
      const header = encodePaymentSignatureHeader(payload);
      const paid = () => fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
      await probe.automine(false);
      const first = await paid();
      expect(first.status).toBe(402);
      expect(await first.json()).toMatchObject({ reason: 'pending' });
      for (let i = 0; i < 3; i++) expect((await paid()).status).toBe(402);
      const copies = await Promise.all(Array.from({ length: 5 }, () => paid()));
      expect(copies.map((c) => c.status)).toEqual(Array(5).fill(402));
      const nonce = (payload.payload as { authorization: { nonce: string } }).authorization.nonce;
      const [row]: Array<{ id: string }> = await t.dataSource.query(`SELECT id FROM x402_settlements WHERE payer = $1`, [payer.address.toLowerCase()]);
      expect(await probe.rows('x402', row.id)).toHaveLength(1);
      expect(await probe.pooledWith(nonce)).toBe(1);
      await mineAll();
      const settled = await waitFor(async () => {
        const r = await paid();
        return r.status === 200 ? r : null;
      }, { label: 'the paid retry answered 200' });
      expect(settled.headers.get('payment-response')).toBeTruthy();
      expect((await paid()).status).toBe(402); // one payment buys one response
      expect(await chain.usdcBalance(payee.address)).toBe(USDC);
    });
  });

  it('agent-escrow release retried (same key, other keys) while its EscrowAction is unmined → no new EscrowAction relayed: one relayer row, one transaction; the retry after mining answers it', async () => {
    const s = await createSeller(t, chain);
    const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
    const created = await t.http.post('/api/v1/agent-escrows').set('X-Api-Key', agent.key).set('Idempotency-Key', `esc-${randomUUID()}`).send({ to: s.handle, amount: '6.00', description: 'Relay intent' });
    expect(created.status).toBe(200);
    const checkoutId = created.body.checkoutSessionId as string;
    await indexUntilStatus(t, s.org, checkoutId, 'funded');
    const release = (key: string) => t.http.post(`/api/v1/agent-escrows/${created.body.id}/release`).set('X-Api-Key', agent.key).set('Idempotency-Key', key).send({ confirm: true });
    const seller0 = await chain.usdcBalance(s.wallet.address);
    await probe.automine(false);
    const first = await release('release-1');
    expect(first.status).toBe(409);
    expect(first.body.details).toMatchObject({ reason: 'pending' });
    for (const key of ['release-1', `release-${randomUUID()}`, 'release-1']) expect((await release(key)).body.details).toMatchObject({ reason: 'pending' });
    const copies = await Promise.all(Array.from({ length: 4 }, () => release(`release-${randomUUID()}`)));
    for (const c of copies) expect(c.status).toBe(409);
    const relays = await probe.rows('agent_escrow_release', created.body.id);
    expect(relays).toHaveLength(1);
    expect(await probe.pooledWith(escrowKeyFromId(checkoutId))).toBe(1);
    await mineAll();
    const answered = await release('release-1');
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({ escrow: { escrowStatus: 'released' }, txHash: relays[0].tx_hash });
    expect(await chain.usdcBalance(s.wallet.address)).toBe(seller0 + 6n * USDC);
    expect(await probe.rows('agent_escrow_release', created.body.id)).toHaveLength(1);
  });

  describe("the agent's float back to its owner", () => {
    it('Withdraw: the same owner-signed Withdraw posted again and again while unmined → one relayer row, one transfer (the owner nonce is the intent)', async () => {
      const agent = await createAgent(t, chain, { float: 30n * USDC });
      const nonce = hexlify(randomBytes(32));
      const deadline = Math.floor(Date.now() / 1000) + 600;
      const signature = await agent.owner.signTypedData(ownerDomain(31337), WITHDRAW_TYPES, { agentId: agent.agentId, amount: 10n * USDC, nonce, deadline });
      const withdraw = () => t.http.post(`/api/v1/agents/${agent.agentId}/withdraw`).send({ amount: '10.00', nonce, deadline, signature });
      const owner0 = await chain.usdcBalance(agent.owner.address);
      await probe.automine(false);
      const answers = await Promise.all(Array.from({ length: 5 }, () => withdraw()));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400, 400, 400]);
      for (const a of answers.filter((x) => x.status === 400)) expect(a.body.details).toMatchObject({ reason: 'nonce_used' });
      expect((await withdraw()).body.details).toMatchObject({ reason: 'nonce_used' });
      expect(await probe.rows('withdraw', `${agent.agentId}:${nonce}`)).toHaveLength(1);
      expect(await probe.pooledWith(agent.owner.address)).toBe(1);
      await mineAll();
      await waitFor(async () => (await chain.usdcBalance(agent.owner.address)) === owner0 + 10n * USDC, { label: 'the withdrawal mined' });
      expect(await chain.usdcBalance(agent.signerAddress)).toBe(20n * USDC);
    });

    it('sweep: disabling the signer again and again (sequential and concurrent) while the sweep is unmined → one relayer row, one transfer; a later float is a new intent', async () => {
      const agent = await createAgent(t, chain, { float: 12n * USDC });
      const agents = t.app.get(AgentsService);
      const owner0 = await chain.usdcBalance(agent.owner.address);
      await probe.automine(false);
      const first = await agents.setSignerEnabled(agent.agentId, false);
      const again = await Promise.all([agents.setSignerEnabled(agent.agentId, false), agents.setSignerEnabled(agent.agentId, false)]);
      const third = await agents.setSignerEnabled(agent.agentId, false);
      // Every answer names the one relay of the intent: its first hash, or a replacement the tender signed
      // at the same nonce (a fee bump, or a resend of a transaction the node stopped showing).
      const signed = await t.app.get(RelayerService).hashesFor('sweep', `${agent.agentId}:sweep`);
      for (const answer of [first, ...again, third]) expect(signed).toContain(answer.sweepTxHash);
      const [sweep] = await probe.rows('sweep', `${agent.agentId}:sweep`);
      expect(await probe.rows('sweep', `${agent.agentId}:sweep`)).toHaveLength(1);
      expect(await probe.pooledWith(agent.owner.address)).toBe(1);
      await mineAll();
      await waitFor(async () => (await chain.usdcBalance(agent.signerAddress)) === 0n, { label: 'the sweep mined' });
      expect(await chain.usdcBalance(agent.owner.address)).toBe(owner0 + 12n * USDC);
      // A new float after the mined sweep: its sweep is a new intent, relayed once.
      await agents.setSignerEnabled(agent.agentId, true);
      await chain.usdc.transfer(agent.owner, agent.signerAddress, 4n * USDC);
      expect((await agents.setSignerEnabled(agent.agentId, false)).sweepTxHash).not.toBe(first.sweepTxHash);
      expect(await probe.rows('sweep', `${agent.agentId}:sweep:${sweep.id}`)).toHaveLength(1);
      await waitFor(async () => (await chain.usdcBalance(agent.signerAddress)) === 0n, { label: 'the second sweep mined' });
      expect(await chain.usdcBalance(agent.owner.address)).toBe(owner0 + 12n * USDC);
    });
  });

  it('the payment sweep: two replicas at once resuming a signed payment, then two more resuming it submitted, while its transfer is unmined → one relayer row, one transfer', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
    const sweep = t.app.get(PaymentSettlement);
    await sweep.sweepOnce(0); // mining on: moves on what earlier files left idle, so the passes below are about this payment
    const p = await signedUnrelayed(agent, payee.handle, '4.00');
    await probe.automine(false);
    await Promise.all([sweep.sweepOnce(0), sweep.sweepOnce(0)]);
    // Submitted now, its transfer unmined: two more replicas' passes resume it.
    expect((await paymentRows(t, agent.agentId))[0].status).toBe('submitted');
    await Promise.all([sweep.sweepOnce(0), sweep.sweepOnce(0)]);
    expect((await paymentRows(t, agent.agentId))[0].status).toBe('submitted');
    expect(await probe.rows('payment', p.id)).toHaveLength(1);
    expect(await probe.pooledWith(p.auth_nonce!)).toBe(1);
    await mineAll();
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect(await chain.usdcBalance(payee.address)).toBe(4n * USDC);
  });

  it("the indexer's auto-release: a pass that gave up waiting, then the next pass, while the release is unmined → one relayer row, one transaction", async () => {
    const { seller, buyer } = await createParties(t, chain, 10n * USDC);
    const checkout = await createCheckout(t, seller.org, { amount: '5.00', escrowTemplateId: 'custom', metadata: { inspectionWindowHours: 1 } });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    const escrowId = (await indexUntilStatus(t, seller.org, checkout.id, 'funded')).escrowId as string;
    const escrowKey = escrowKeyFromId(checkout.id);
    for (const [action, path] of [['accept', 'accept'], ['markDelivered', 'mark-delivered']] as const) {
      const reported = await t.http.post(`/api/v1/escrows/${escrowId}/${path}`).set('X-Api-Key', seller.org.key).send({ txHash: await chain.act(seller.wallet, action, escrowKey) });
      expect(reported.status).toBe(200);
    }
    const indexer = t.app.get(EscrowIndexer);
    // Mining on: releases what earlier files left due, so the passes below do not wait on their unmined releases.
    expect(await indexer.autoReleaseDue()).not.toContain(escrowId);
    const autoReleaseAt = Date.parse((await t.http.get(`/api/v1/escrows/${escrowId}`).set('X-Api-Key', seller.org.key)).body.autoReleaseAt) / 1000;
    await chain.increaseTime(Math.max(1, autoReleaseAt - (await chain.headTimestamp()) + 1));
    const seller0 = await chain.usdcBalance(seller.wallet.address);

    const relay = jest.spyOn(t.app.get(RelayerService), 'relay'); // calls through: only to know when a pass has relayed
    /** The relay() answer of the `n`-th call of this escrow's auto-release (1-based), once it is made. */
    const relayed = async (n: number) => {
      const i = await waitFor(() => {
        const at = relay.mock.calls.flatMap((c, k) => (c[0].purpose === 'auto-release' && c[0].reference === escrowId ? [k] : []));
        return at.length >= n ? at[n - 1] + 1 : 0;
      }, { label: `auto-release relay call ${n}` });
      return relay.mock.results[i - 1].value as ReturnType<RelayerService['relay']>;
    };
    try {
      await probe.automine(false);
      const pass1 = indexer.autoReleaseDue();
      const firstRelay = await relayed(1);
      // The first pass waits (bounded) for its unmined release; let its wait run out now.
      const clock = Date.now;
      const ahead = jest.spyOn(Date, 'now').mockImplementation(() => clock.call(Date) + 61_000);
      try {
        expect(await pass1).not.toContain(escrowId);
      } finally {
        ahead.mockRestore();
      }
      const pass2 = indexer.autoReleaseDue();
      expect((await relayed(2)).relayTxId).toBe(firstRelay.relayTxId);
      expect(await probe.rows('auto-release', escrowId)).toHaveLength(1);
      expect(await probe.pooledWith(escrowKey)).toBe(1);
      await mineAll();
      expect(await pass2).toContain(escrowId);
    } finally {
      relay.mockRestore();
    }
    expect(await chain.usdcBalance(seller.wallet.address)).toBe(seller0 + 5n * USDC);
    expect(await probe.rows('auto-release', escrowId)).toHaveLength(1);
  });

  describe('the kill switch (AGENTS_ENABLED=false)', () => {
    let off: TestApp;
    beforeAll(async () => {
      off = await createTestApp({ AGENTS_ENABLED: 'false', CHAIN_WAIT_MS: '1000' });
    });
    afterAll(() => off?.close());

    it("cancelAuthorization on every sweep pass (two replicas, then a third pass) while the first cancel is unmined → one relayer row, one cancel; the payment fails cancelled", async () => {
      const payee = await createPayee(t, chain);
      const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
      const sweep = off.app.get(PaymentSettlement);
      await sweep.sweepOnce(0); // mining on: cancels what earlier files left signed, so the passes below do not wait on those cancels
      const p = await signedUnrelayed(agent, payee.handle, '5.00');
      await probe.automine(false);
      await Promise.all([sweep.sweepOnce(0), sweep.sweepOnce(0)]);
      await sweep.sweepOnce(0);
      expect(await probe.rows('cancel_authorization', p.id)).toHaveLength(1);
      expect(await probe.rows('payment', p.id)).toHaveLength(0);
      expect(await probe.pooledWith(p.auth_nonce!)).toBe(1);
      await mineAll();
      expect(await chain.usdc.authorizationState(agent.signerAddress, p.auth_nonce!)).toBe(true);
      await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'failed');
      expect(await chain.usdcBalance(payee.address)).toBe(0n);
      expect(await chain.usdcBalance(agent.signerAddress)).toBe(20n * USDC);
    });
  });
});
