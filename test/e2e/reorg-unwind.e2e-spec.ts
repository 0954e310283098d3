import type { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AUTHORIZATION_CURSOR } from '../../src/chain/chain-cursors.repository';
import { ReconciliationService } from '../../src/chain/reconciliation/reconciliation.service';
import { RelayerTender } from '../../src/chain/relayer/relayer-tender.service';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { createAgent, createPayee, pay, paymentRows, settleUntil, startRelayerWorker } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { TestChain, USDC } from '../support/chain';
import { expectError } from '../support/errors';

jest.setTimeout(120_000);

/**
 * Issue 29 finding 4 (DESIGN §22 "Reorgs unwind"): a reorg deeper than CONFIRMATIONS removes the
 * transfer of a payment already recorded `succeeded`. The ledger must take it back (`submitted`, still
 * counting against the float), refuse a new payment that would spend the same float again, and settle
 * the first payment once its transfer is mined again.
 *
 * The relayer worker's tender is run by hand (its schedule is set to an hour), so the test decides
 * when the reorged transaction is sent again: the second payment comes before the resend, as on a
 * public chain where the resend waits for fees or for the next tender pass.
 */
describe('a reorg deeper than CONFIRMATIONS unwinds a succeeded payment', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    const saved = process.env.CHAIN_POLL_MS;
    process.env.CHAIN_POLL_MS = '3600000';
    try {
      worker = await startRelayerWorker();
    } finally {
      if (saved === undefined) delete process.env.CHAIN_POLL_MS;
      else process.env.CHAIN_POLL_MS = saved;
    }
  });
  afterAll(async () => {
    chain?.close();
    await worker?.close();
    await t?.close();
  });

  const cursor = async () => Number((await t.dataSource.query(`SELECT block_number FROM chain_cursors WHERE name = $1`, [AUTHORIZATION_CURSOR]))[0].block_number);

  it('float 1.00; pay 1.00; mined past CONFIRMATIONS; reverted: the payment goes back to submitted, a second 1.00 is refused, the first settles again; reconciliation is clean', async () => {
    const settlement = t.app.get(PaymentSettlement);
    const first = await createPayee(t, chain);
    const second = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 1n * USDC });
    await settlement.pollOnce();
    await settlement.pollOnce();

    const snapshot = await chain.snapshot();
    const paid = await pay(t, agent, { to: first.handle, amount: '1.00' });
    expect(paid.status).toBe(200);
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded', 'the first payment settled');
    const [settled] = await paymentRows(t, agent.agentId);
    const receipt = (await chain.provider.getTransactionReceipt(settled.tx_hash!))!;
    expect(receipt.status).toBe(1);
    await chain.mine(3);
    await settlement.pollOnce();
    expect(await cursor()).toBeGreaterThan(receipt.blockNumber);
    expect(await chain.usdcBalance(first.address)).toBe(USDC);

    // The fault: the blocks holding the transfer leave the chain (and the node's pool).
    await chain.revert(snapshot);
    await chain.mine(2);
    expect(await chain.provider.getTransactionReceipt(settled.tx_hash!)).toBeNull();
    expect(await chain.usdcBalance(first.address)).toBe(0n);
    expect(await chain.usdcBalance(agent.signerAddress)).toBe(USDC);

    // Before any indexer pass saw the reorg: the spend check does not count the reverted 1.00 as free.
    expect(expectError(await pay(t, agent, { to: second.handle, amount: '1.00' }), 403, 'policy_denied')).toMatchObject({ rule: 'insufficient_balance', limit: '0.00' });

    // The indexer pass rewinds and takes the payment back.
    const pass = await settlement.pollOnce();
    expect(pass.rewoundTo).toEqual(expect.any(Number));
    expect((await paymentRows(t, agent.agentId))[0]).toMatchObject({ id: settled.id, status: 'submitted', tx_hash: null });
    const seen = await t.http.get(`/api/v1/payments/${settled.id}`).set('X-Api-Key', agent.key);
    expect(seen.body).toMatchObject({ status: 'submitted', txHash: null });
    expect(expectError(await pay(t, agent, { to: second.handle, amount: '1.00' }), 403, 'policy_denied')).toMatchObject({ rule: 'insufficient_balance', limit: '0.00' });
    expect(await paymentRows(t, agent.agentId)).toHaveLength(1);

    // The relayer sends the reorged transfer again; the payment settles on the new chain.
    await worker.get(RelayerTender).tend();
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded', 'the first payment settled again');
    const [again] = await paymentRows(t, agent.agentId);
    const mined = (await chain.provider.getTransactionReceipt(again.tx_hash!))!;
    expect(mined.status).toBe(1);
    expect(await chain.usdcBalance(first.address)).toBe(USDC);
    expect(await chain.usdcBalance(second.address)).toBe(0n);
    expect(await chain.usdcBalance(agent.signerAddress)).toBe(0n);
    const reverted = await t.dataSource.query(`SELECT id FROM relayer_transactions WHERE reference = $1 AND status = 'failed'`, [settled.id]);
    expect(reverted).toEqual([]);

    const report = await t.app.get(ReconciliationService).run();
    expect(report.mismatches.filter((m) => m.kind === 'payment_authorization')).toEqual([]);
  });

  it('an x402 settlement answered 200 whose transfer a reorg removed: back to pending, still answered; reconciliation reports it until the transfer is mined again', async () => {
    const settlement = t.app.get(PaymentSettlement);
    const reconcile = t.app.get(ReconciliationService);
    const payer = await chain.wallet({ usdc: 2n * USDC });
    const payTo = (await chain.wallet({ eth: false })).address;
    const submitter = await chain.wallet(); // the payer's facilitator here; not the relayer (its nonces are the queue's)
    const auth = await chain.usdc.signTransferAuthorization(payer, { to: payTo, value: USDC, validBefore: BigInt((await chain.headTimestamp()) + 3600) });
    const id = randomUUID();
    await t.dataSource.query(
      `INSERT INTO x402_settlements (id, payer, nonce, pay_to, payee_handle, amount, resource, status, valid_after, valid_before, signature)
       VALUES ($1, lower($2), lower($3), $4, 'shop', $5, 'https://example.test/r', 'pending', 0, $6, $7)`,
      [id, payer.address, auth.nonce, payTo, USDC.toString(), auth.validBefore.toString(), auth.signature],
    );
    const row = async () => (await t.dataSource.query(`SELECT status, tx_hash, settled_block::int AS block, answered_at FROM x402_settlements WHERE id = $1`, [id]))[0];
    await settlement.pollOnce();

    const snapshot = await chain.snapshot();
    const sent = await submitter.sendTransaction({ to: chain.usdc.address, data: chain.usdc.encodeTransferWithAuthorization(auth) });
    const raw = await chain.rpc<string>('eth_getRawTransactionByHash', [sent.hash]);
    const receipt = await chain.mined(sent, 'transfer');
    await chain.mine(3);
    await settlement.pollOnce();
    expect(await row()).toMatchObject({ status: 'settled', tx_hash: receipt.hash, block: receipt.blockNumber });
    await t.dataSource.query(`UPDATE x402_settlements SET answered_at = now() WHERE id = $1`, [id]); // the 200 was given

    await chain.revert(snapshot);
    await chain.mine(2);
    expect(await chain.provider.getTransactionReceipt(receipt.hash)).toBeNull();
    expect(await chain.usdcBalance(payTo)).toBe(0n);

    expect((await settlement.pollOnce()).unwound).toContain(id);
    expect(await row()).toMatchObject({ status: 'pending', tx_hash: null, block: null, answered_at: expect.any(Date) });
    const open = await reconcile.run();
    expect(open.mismatches.filter((m) => m.ids.includes(id))).toEqual([{ kind: 'x402_authorization', ids: [id], expected: 'authorization used on chain', actual: 'unused' }]);

    // The transfer mined again: settled again, and reconciliation has nothing to say about it.
    expect(await chain.rpc<string>('eth_sendRawTransaction', [raw])).toBe(receipt.hash);
    await chain.mine(1);
    await settlement.pollOnce();
    expect(await row()).toMatchObject({ status: 'settled', tx_hash: receipt.hash, answered_at: expect.any(Date) });
    expect(await chain.usdcBalance(payTo)).toBe(USDC);
    expect((await reconcile.run()).mismatches.filter((m) => m.ids.includes(id))).toEqual([]);
  });
});
