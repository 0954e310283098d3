import { randomUUID } from 'node:crypto';
import { Wallet } from 'ethers';
import { RelayerService } from '../../src/chain/relayer/relayer.service';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { PaymentsService } from '../../src/modules/payments/payments.service';
import { RelayerLiveIntent1795300079000 } from '../../migrations/1795300079000-RelayerLiveIntent';
import { createAgent, createPayee, pay, useAgentStack } from '../support/agents';
import type { TestApp } from '../support/app';
import { createCheckout, createParties, indexUntilStatus, Party, TestChain, USDC } from '../support/chain';
import { relayIntentProbe } from '../support/relay-intent';

jest.setTimeout(180_000);

type TypedData = { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; primaryType: string; message: Record<string, unknown> };
const sign = (wallet: Wallet, typedData: TypedData) =>
  wallet.signTypedData(typedData.domain, Object.fromEntries(Object.entries(typedData.types).filter(([k]) => k !== 'EIP712Domain')), typedData.message);

/**
 * Issue 29 finding 1 (DESIGN §22 "One live relay per intent"): at most one relayer row that has not
 * failed per (purpose, reference), enforced by the database; relay() resumes the live row instead of
 * relaying the payload again. Nothing is mined while the copies arrive (automine off), so every copy
 * finds the first still in flight, as on a public chain.
 */
describe('one live relay per intent (issue 29 finding 1)', () => {
  let t: TestApp;
  let chain: TestChain;
  useAgentStack({}, (s) => ({ t, chain } = s));
  const { automine, rows, pooled, pooledWith } = relayIntentProbe(
    () => t,
    () => chain,
  );
  afterEach(() => automine(true));

  it('relay(): 10 concurrent relays of one intent with different payloads: one row, one transaction; a new row only once it failed', async () => {
    const relayer = t.app.get(RelayerService);
    const reference = randomUUID();
    const payee = await createPayee(t, chain);
    await automine(false);
    const pool0 = await pooled();
    // Ten payloads of one intent (each a 0-value USDC transfer call would differ; here a different recipient each time).
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        relayer.relay({ to: chain.relayer.address, data: `0x${i.toString(16).padStart(2, '0')}`, purpose: 'test-intent', reference }),
      ),
    );
    expect(new Set(results.map((r) => r.relayTxId)).size).toBe(1);
    expect(new Set(results.map((r) => r.txHash)).size).toBe(1);
    expect(await rows('test-intent', reference)).toHaveLength(1);
    expect((await pooled()) - pool0).toBe(1);
    await automine(true);
    await chain.mine();
    // Every row of the intent failed → a new relay is allowed.
    await t.dataSource.query(`UPDATE relayer_transactions SET status = 'failed' WHERE purpose = 'test-intent' AND reference = $1`, [reference]);
    const again = await relayer.relay({ to: payee.address, data: '0x', purpose: 'test-intent', reference });
    expect(again.relayTxId).not.toBe(results[0].relayTxId);
    expect(await rows('test-intent', reference)).toHaveLength(2);
    // The database refuses a second live row however it is written.
    await expect(
      t.dataSource.query(`INSERT INTO relayer_transactions (id, address, to_address, data, purpose, reference, status) VALUES ($1, $2, $2, '0x', 'test-intent', $3, 'queued')`, [
        randomUUID(),
        chain.relayer.address.toLowerCase(),
        reference,
      ]),
    ).rejects.toThrow(/relayer_transactions_live_intent/);
  });

  it('an agent payment resumed while its transfer is unmined (same-key retry path, the sweep): one relayer row, one transfer in the pool', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '100.00' } });
    await automine(false);
    const key = `pay-${randomUUID()}`;
    const first = await pay(t, agent, { to: payee.handle, amount: '5.00' }, key);
    expect(first.status).toBe(200);
    expect(first.body.status).toBe('submitted');
    const payments = t.app.get(PaymentsService);
    const p = (await payments.findForAgent(agent.agentId, first.body.id))!;
    // What a same-key replay of a row not yet answered, A2A's same taskId and the sweep all do: resume the row.
    await Promise.all(Array.from({ length: 5 }, () => payments.resume(p)));
    await t.app.get(PaymentSettlement).sweepOnce(0);
    for (let i = 0; i < 3; i++) await pay(t, agent, { to: payee.handle, amount: '5.00' }, key);
    expect(await rows('payment', p.id)).toHaveLength(1);
    // This intent's transactions only: the sweep also resumes payments other files left idle in the shared database.
    expect(await pooledWith(p.authNonce!)).toBe(1);
    await automine(true);
    await chain.mine();
    expect(await chain.usdcBalance(payee.address)).toBe(5n * USDC);
  });

  describe('public buyer actions', () => {
    let seller: Party;
    beforeAll(async () => {
      ({ seller } = await createParties(t, chain, 0n));
    });

    it('20 concurrent copies of one signed buyer action: one relayer row keyed by (actor, nonce), one transaction on chain', async () => {
      const buyer = await chain.wallet({ usdc: 100n * USDC, eth: false });
      const checkout = await createCheckout(t, seller.org, { amount: '4.00' });
      const funding = await t.http.get(`/checkout/${checkout.id}/funding`).query({ buyer: buyer.address });
      const fm = funding.body.typedData.message as Record<string, string>;
      const relayed = await t.http
        .post(`/checkout/${checkout.id}/relay`)
        .send({ buyer: buyer.address, validAfter: fm.validAfter, validBefore: fm.validBefore, nonce: fm.nonce, signature: await sign(buyer, funding.body.typedData) });
      expect(relayed.status).toBe(200);
      await indexUntilStatus(t, seller.org, checkout.id, 'funded');

      const typed = await t.http.get(`/checkout/${checkout.id}/actions/cancel`).query({ actor: buyer.address });
      const m = typed.body.typedData.message as { nonce: string; deadline: number };
      const body = { action: 'cancel', actor: buyer.address, nonce: m.nonce, deadline: Number(m.deadline), signature: await sign(buyer, typed.body.typedData) };
      await automine(false);
      const pool0 = await pooled();
      const answers = await Promise.all(Array.from({ length: 20 }, () => t.http.post(`/checkout/${checkout.id}/actions`).send(body)));
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
      expect(new Set(answers.map((a) => a.body.txHash)).size).toBe(1);
      const reference = `${buyer.address.toLowerCase()}:${m.nonce.toLowerCase()}`;
      expect(await rows('buyer-cancel', reference)).toHaveLength(1);
      expect((await pooled()) - pool0).toBe(1);
      await automine(true);
      await chain.mine();
      await indexUntilStatus(t, seller.org, checkout.id, 'open');
      expect(await chain.usdcBalance(buyer.address)).toBe(100n * USDC);
    });
  });

  it('the migration keeps one live row per intent among existing duplicates (the mined one) and fails the others', async () => {
    const migration = new RelayerLiveIntent1795300079000();
    const runner = t.dataSource.createQueryRunner();
    try {
      await migration.down(runner);
      const reference = randomUUID();
      const address = chain.relayer.address.toLowerCase();
      const ids = [randomUUID(), randomUUID(), randomUUID()];
      await runner.query(
        `INSERT INTO relayer_transactions (id, address, to_address, data, purpose, reference, status, mined_tx_hash, created_at) VALUES
           ($1, $4, $4, '0x', 'legacy', $5, 'broadcast', '0xaa', now() - interval '3 minutes'),
           ($2, $4, $4, '0x', 'legacy', $5, 'broadcast', NULL, now() - interval '2 minutes'),
           ($3, $4, $4, '0x', 'legacy', $5, 'queued', NULL, now() - interval '1 minute')`,
        [...ids, address, reference],
      );
      await migration.up(runner);
      const after: Array<{ id: string; status: string; error: string | null }> = await runner.query(`SELECT id, status, error FROM relayer_transactions WHERE reference = $1 ORDER BY created_at`, [reference]);
      expect(after.map((r) => r.status)).toEqual(['broadcast', 'failed', 'failed']);
      expect(after[1].error).toContain(`superseded by ${ids[0]}`);
    } finally {
      await runner.release();
    }
  });
});
