import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { ExactEvmScheme as ClientExactEvmScheme } from '@x402/evm/exact/client';
import { randomUUID } from 'node:crypto';
import { privateKeyToAccount } from 'viem/accounts';
import { balanceTransactionId } from '../../src/modules/balance/balance-projector.service';
import { BalanceReconciler } from '../../src/modules/balance/balance-reconciler.service';
import { EscrowIndexer } from '../../src/modules/escrow/escrow-indexer.service';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import type { TestApp } from '../support/app';
import { createAgent, createPayee, pay, paymentRows, useAgentStack } from '../support/agents';
import { createCheckout, createParties, fundingTerms, indexUntilStatus, Party, pollToHead, runAtChainTime, TestChain, USDC } from '../support/chain';
import { expectError } from '../support/errors';
import { createKey } from '../support/factories';

jest.setTimeout(180_000);

type Row = { id: string; type: string; amount: string; fee: string; net: string; currency: string; sourceType: string; sourceId: string; txHash: string; logIndex: number; blockNumber: number; blockTimestamp: string };

/**
 * The ledger (DESIGN §21, §22; docs/api.md "Balance transactions"): rows come from the chain at the
 * confirmation depth (CONFIRMATIONS=2 here), through the indexers only; the list pages and filters
 * by block time; the CSV statement equals the list; a reorg deeper than the depth removes a row and
 * the new chain re-adds it under the same id.
 */
describe('balance transactions', () => {
  let t: TestApp;
  let chain: TestChain;
  useAgentStack({ env: { CONFIRMATIONS: '2' } }, (s) => ({ t, chain } = s));

  const list = (key: string, query: Record<string, string | number> = {}) => t.http.get('/api/v1/balance-transactions').query(query).set('X-Api-Key', key);
  const all = async (key: string): Promise<Row[]> => {
    const res = await list(key, { limit: 100 });
    expect(res.status).toBe(200);
    return res.body.data;
  };
  /** Both indexers to the confirmed head (the escrow one through the shared test helper, the authorization one until its cursor stops moving). */
  const indexAll = async () => {
    await pollToHead(t, chain).catch(() => undefined);
    for (let i = 0; i < 20; i++) {
      const r = await t.app.get(PaymentSettlement).pollOnce();
      if (r.toBlock < r.fromBlock) break;
    }
    for (let i = 0; i < 20; i++) {
      const r = await t.app.get(EscrowIndexer).pollOnce();
      if (r.toBlock < r.fromBlock) break;
    }
  };
  /** The USDC Transfer log index of `txHash` (its only transfer). */
  const transferLog = async (txHash: string) => {
    const receipt = (await chain.provider.getTransactionReceipt(txHash))!;
    const transfers = receipt.logs.filter((l) => l.address.toLowerCase() === chain.usdc.address.toLowerCase() && l.topics.length === 3);
    const paying = transfers[transfers.length - 1];
    return { logIndex: paying.index, blockNumber: receipt.blockNumber, timestamp: (await chain.provider.getBlock(receipt.blockNumber))!.timestamp };
  };

  /** A funded escrow of `amount` between fresh parties, indexed at the depth. */
  async function fundedEscrow(amount: string): Promise<{ seller: Party; buyer: Party; checkoutId: string; escrowKey: string; sellerKey: string }> {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount });
    const { funding, terms } = await fundingTerms(t, checkout.id, buyer.wallet.address);
    await chain.fundWithAuthorization(buyer.wallet, terms, funding.termsSignature);
    await chain.mine(2);
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    return { seller, buyer, checkoutId: checkout.id, escrowKey: terms.escrowKey, sellerKey: await createKey(t.app, seller.org.organizationId, ['balance:read']) };
  }

  it('an escrow release gives the seller one + row at the confirmation depth, not before; funding gives none', async () => {
    const { buyer, checkoutId, escrowKey, sellerKey } = await fundedEscrow('9.00');
    expect(await all(sellerKey)).toEqual([]);
    const releaseTx = await chain.act(buyer.wallet, 'release', escrowKey);
    await indexAll();
    const mined = (await chain.provider.getTransactionReceipt(releaseTx))!.blockNumber;
    expect(await chain.headBlock()).toBeLessThan(mined + 2); // not yet at the depth: the indexers ran and wrote nothing
    expect(await all(sellerKey)).toEqual([]);

    await chain.mine(2);
    await indexAll();
    const log = await transferLog(releaseTx);
    expect(await all(sellerKey)).toEqual([
      {
        id: balanceTransactionId(releaseTx, log.logIndex),
        type: 'escrow_release',
        amount: '9.00',
        fee: '0.00',
        net: '9.00',
        currency: 'USDC',
        sourceType: 'checkout_session',
        sourceId: checkoutId,
        txHash: releaseTx.toLowerCase(),
        logIndex: log.logIndex,
        blockNumber: log.blockNumber,
        blockTimestamp: new Date(log.timestamp * 1000).toISOString(),
      },
    ]);
    // The buyer's organisation has no ledger rows from paying into escrow.
    expect(await all(await createKey(t.app, buyer.org.organizationId, ['balance:read']))).toEqual([]);
    await indexAll();
    expect(await all(sellerKey)).toHaveLength(1); // re-reading changes nothing
  });

  it('an agent payment to the organisation and an x402 settlement of its challenge give + rows; paging and filters; CSV equals the list and adds up', async () => {
    const payee = await createPayee(t, chain);
    const key = await createKey(t.app, payee.organizationId, ['balance:read']);
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '100.00' } });
    for (const amount of ['1.00', '2.50', '3.25']) {
      const res = await pay(t, agent, { to: payee.handle, amount });
      expect(res.status).toBe(200);
      await chain.increaseTime(60); // distinct block times to filter on
      await chain.mine(1);
    }
    const challenge = await t.http.get('/api/v1/x402/challenge').query({ to: payee.handle, amount: '0.40' });
    expect(challenge.status).toBe(402);
    const settle = await t.http.post('/api/v1/x402/settle').set('X-Api-Key', agent.key).set('Idempotency-Key', `x402-${randomUUID()}`).send({ paymentRequired: challenge.headers['payment-required'] });
    expect(settle.status).toBe(200);
    await chain.mine(3);
    let rows: Row[] = [];
    for (let i = 0; i < 30 && rows.length < 4; i++) {
      await indexAll();
      rows = await all(key);
    }
    const payments = await paymentRows(t, agent.agentId);
    expect(payments.every((p) => p.status === 'succeeded')).toBe(true);
    expect(rows.map((r) => [r.type, r.amount, r.sourceType])).toEqual([
      ['x402', '0.40', 'payment'],
      ['payment', '3.25', 'payment'],
      ['payment', '2.50', 'payment'],
      ['payment', '1.00', 'payment'],
    ]);
    for (const r of rows) {
      const p = payments.find((x) => x.id === r.sourceId)!;
      expect(r.txHash).toBe(p.tx_hash!.toLowerCase());
      expect(r.id).toBe(balanceTransactionId(r.txHash, r.logIndex));
    }
    expect(await chain.usdcBalance(payee.address)).toBe(7_150_000n);

    // Paging: newest first, two by two, with the list's cursor.
    const first = await list(key, { limit: 2 });
    expect(first.body).toMatchObject({ hasMore: true, nextCursor: rows[1].id });
    expect(first.body.data.map((r: Row) => r.id)).toEqual([rows[0].id, rows[1].id]);
    const second = await list(key, { limit: 2, starting_after: first.body.nextCursor });
    expect(second.body).toMatchObject({ hasMore: false, nextCursor: null });
    expect(second.body.data.map((r: Row) => r.id)).toEqual([rows[2].id, rows[3].id]);
    expectError(await list(key, { starting_after: randomUUID() }), 400, 'invalid_request');
    expectError(await list(key, { type: 'deposit' }), 400, 'invalid_request');
    expectError(await list(key, { 'created[gte]': 'yesterday' }), 400, 'invalid_request');

    // Filters: type, and the block-time window [gte, lt).
    expect((await list(key, { type: 'x402' })).body.data.map((r: Row) => r.id)).toEqual([rows[0].id]);
    expect((await list(key, { type: 'payment', limit: 100 })).body.data).toHaveLength(3);
    const window = await list(key, { 'created[gte]': rows[2].blockTimestamp, 'created[lt]': rows[0].blockTimestamp, limit: 100 });
    expect(window.status).toBe(200);
    expect(window.body.data.map((r: Row) => r.id)).toEqual([rows[1].id, rows[2].id]);
    expect((await list(key, { 'created[gte]': rows[0].blockTimestamp, 'created[lt]': rows[0].blockTimestamp })).body.data).toEqual([]);

    // The statement: a header, then the same rows oldest first, decimal text adding up to the list's sum.
    const from = new Date(Date.parse(rows[3].blockTimestamp) - 86_400_000).toISOString();
    const to = new Date(Date.parse(rows[0].blockTimestamp) + 86_400_000).toISOString();
    const csv = await t.http.get('/api/v1/balance-transactions/export').query({ from, to }).set('X-Api-Key', key).buffer(true).parse((res, cb) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => cb(null, text));
    });
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    const lines = (csv.body as string).split('\r\n');
    expect(lines.pop()).toBe('');
    expect(lines[0]).toBe('id,type,amount,fee,net,currency,sourceType,sourceId,txHash,logIndex,blockNumber,blockTimestamp');
    const records = lines.slice(1).map((l) => l.split(','));
    expect(records.map((r) => r[0])).toEqual([...rows].reverse().map((r) => r.id));
    for (const [i, r] of [...rows].reverse().entries()) {
      expect(records[i]).toEqual([r.id, r.type, r.amount, r.fee, r.net, r.currency, r.sourceType, r.sourceId, r.txHash, String(r.logIndex), String(r.blockNumber), r.blockTimestamp]);
    }
    const units = (text: string) => {
      const [whole, fraction = ''] = text.replace('-', '').split('.');
      return (text.startsWith('-') ? -1n : 1n) * (BigInt(whole) * USDC + BigInt(fraction.padEnd(6, '0')));
    };
    const sum = (xs: string[]) => xs.reduce((a, s) => a + units(s), 0n);
    expect(sum(records.map((r) => r[4]))).toBe(sum(rows.map((r) => r.net)));
    expect(sum(records.map((r) => r[2]))).toBe(7_150_000n);

    // Reconciliation: the rows are the chain's Transfer logs and add up to them; a row the chain does not bear out is reported.
    const reconciler = t.app.get(BalanceReconciler);
    expect(await reconciler.check(payee.organizationId, new Date(from), new Date(to))).toMatchObject({ rows: 4, ledger: '7.15', chain: '7.15', clean: true, mismatches: [] });
    await t.dataSource.query(`UPDATE balance_transactions SET amount = amount + 1 WHERE id = $1`, [rows[1].id]);
    const tampered = await reconciler.check(payee.organizationId, new Date(from), new Date(to));
    await t.dataSource.query(`UPDATE balance_transactions SET amount = amount - 1 WHERE id = $1`, [rows[1].id]);
    expect(tampered).toMatchObject({ clean: false, ledger: '7.150001', chain: '7.15' });
    expect(tampered.mismatches.map((m) => [m.kind, m.id])).toEqual([['row_without_log', rows[1].id]]);
    // The other way round: a Transfer of a relayed payment (and of the x402 settlement) whose row is gone is reported.
    const [saved] = await t.dataSource.query(`SELECT * FROM balance_transactions WHERE id = $1`, [rows[2].id]);
    const [savedX402] = await t.dataSource.query(`SELECT * FROM balance_transactions WHERE id = $1`, [rows[0].id]);
    await t.dataSource.query(`DELETE FROM balance_transactions WHERE id = ANY($1)`, [[rows[2].id, rows[0].id]]);
    let gone: Awaited<ReturnType<BalanceReconciler['check']>>;
    try {
      gone = await reconciler.check(payee.organizationId, new Date(from), new Date(to));
    } finally {
      for (const row of [saved, savedX402]) {
        const cols = Object.keys(row);
        await t.dataSource.query(`INSERT INTO balance_transactions (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})`, cols.map((c) => row[c]));
      }
    }
    expect(gone).toMatchObject({ clean: false, rows: 2, ledger: '4.25', chain: '7.15' });
    expect(gone.mismatches.map((m) => [m.kind, m.id, m.txHash, m.logIndex]).sort()).toEqual(
      [
        ['log_without_row', rows[2].id, rows[2].txHash, rows[2].logIndex],
        ['log_without_row', rows[0].id, rows[0].txHash, rows[0].logIndex],
      ].sort(),
    );
    expect(gone.mismatches.find((m) => m.id === rows[0].id)!.expected).toContain('x402 row of 0.40');
    expect(await reconciler.check(payee.organizationId, new Date(from), new Date(to))).toMatchObject({ rows: 4, clean: true, mismatches: [] });

    const yearAndADay = new Date(Date.parse(from) + 367 * 86_400_000).toISOString();
    expectError(await t.http.get('/api/v1/balance-transactions/export').query({ from, to: yearAndADay }).set('X-Api-Key', key), 400, 'invalid_request');
    expectError(await t.http.get('/api/v1/balance-transactions/export').query({ from: to, to: from }).set('X-Api-Key', key), 400, 'invalid_request');
    expectError(await t.http.get('/api/v1/balance-transactions/export').query({ to }).set('X-Api-Key', key), 400, 'invalid_request');
  });

  it('a reorg deeper than the confirmation depth removes the row, and the transaction mined again re-adds it under the same id', async () => {
    const { buyer, escrowKey, sellerKey } = await fundedEscrow('4.00');
    await indexAll();
    const snapshot = await chain.snapshot();
    const releaseTx = await chain.act(buyer.wallet, 'release', escrowKey);
    const raw = await chain.rpc<string>('eth_getRawTransactionByHash', [releaseTx]);
    await chain.mine(3);
    await indexAll();
    const [before] = await all(sellerKey);
    expect(before).toMatchObject({ type: 'escrow_release', amount: '4.00', txHash: releaseTx.toLowerCase() });

    await chain.revert(snapshot); // the release and three blocks on top of it are gone: deeper than CONFIRMATIONS=2
    await chain.mine(6);
    expect(await chain.provider.getTransactionReceipt(releaseTx)).toBeNull();
    await indexAll();
    expect(await all(sellerKey)).toEqual([]);

    expect(await chain.rpc<string>('eth_sendRawTransaction', [raw])).toBe(releaseTx);
    await chain.mine(3);
    await indexAll();
    const [after] = await all(sellerKey);
    expect(after.blockNumber).not.toBe(before.blockNumber);
    expect(after).toEqual({ ...before, blockNumber: after.blockNumber, blockTimestamp: after.blockTimestamp, logIndex: after.logIndex, id: balanceTransactionId(releaseTx, after.logIndex) });
    expect(after.id).toBe(before.id);
  });

  it('a paid retry of the organisation\'s x402 challenge (a payer outside the product) gives an x402 row from its settlement', async () => {
    const payee = await createPayee(t, chain);
    const key = await createKey(t.app, payee.organizationId, ['balance:read']);
    const payer = await chain.wallet({ usdc: 5n * USDC, eth: false });
    const challenge = await t.http.get('/api/v1/x402/challenge').query({ to: payee.handle, amount: '0.40' });
    expect(challenge.status).toBe(402);
    const client = new x402Client().register('eip155:31337', new ClientExactEvmScheme(privateKeyToAccount(payer.privateKey as `0x${string}`))).setSpendControls(false);
    // The payer signs at the chain's time: earlier files move the shared anvil's clock ahead of this process's.
    const restoreClock = await runAtChainTime(chain);
    const payload = await client.createPaymentPayload(decodePaymentRequiredHeader(challenge.headers['payment-required'])).finally(restoreClock);
    const header = Buffer.from(JSON.stringify(payload)).toString('base64');
    const paid = await t.http.get('/api/v1/x402/challenge').query({ to: payee.handle, amount: '0.40' }).set('PAYMENT-SIGNATURE', header);
    expect([200, 402]).toContain(paid.status);
    let rows: Row[] = [];
    for (let i = 0; i < 40 && rows.length === 0; i++) {
      await chain.mine(1);
      await indexAll();
      rows = await all(key);
    }
    const [settlement] = await t.dataSource.query(`SELECT id, tx_hash FROM x402_settlements WHERE payer = $1`, [payer.address.toLowerCase()]);
    expect(rows).toEqual([expect.objectContaining({ type: 'x402', amount: '0.40', net: '0.40', sourceType: 'x402_settlement', sourceId: settlement.id, txHash: settlement.tx_hash.toLowerCase() })]);
    expect(await chain.usdcBalance(payee.address)).toBe(400_000n);
  });

  it('refuses a credential without balance:read (403 missing_scope), on the list and the export', async () => {
    const payee = await createPayee(t, chain);
    const key = await createKey(t.app, payee.organizationId, ['checkout:read', 'escrow:*']);
    const details = expectError(await list(key), 403, 'missing_scope');
    expect(details).toMatchObject({ required: ['balance:read'] });
    expectError(await t.http.get('/api/v1/balance-transactions/export').query({ from: '2026-01-01', to: '2026-02-01' }).set('X-Api-Key', key), 403, 'missing_scope');
    const star = await createKey(t.app, payee.organizationId, ['balance:*']);
    expect((await list(star)).status).toBe(200);
  });
});
