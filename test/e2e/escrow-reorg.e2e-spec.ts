import { Interface } from 'ethers';
import { TestUSDCArtifact } from '@lib/contracts';
import { derivedEventId } from '../../src/common/outbox/events.service';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { EscrowIndexer } from '../../src/modules/escrow/escrow-indexer.service';
import { createTestApp, TestApp } from '../support/app';
import {
  chainEventRows,
  checkoutEvents,
  createCheckout,
  createParties,
  fundingTerms,
  getCheckout,
  indexUntilStatus,
  Party,
  pollToHead,
  TestChain,
  USDC,
} from '../support/chain';
import { expectError } from '../support/errors';

jest.setTimeout(60_000);

const USDC_IFACE = new Interface(TestUSDCArtifact.abi);

/**
 * Chain reorgs (docs/architecture.md §7; issue 4 "Reorg"): anvil evm_snapshot/evm_revert undoes blocks whose
 * escrow logs were applied, and fresh blocks are mined on top, so the same heights carry other
 * hashes. The indexer must notice by block hash, forget what the old branch applied and re-derive
 * escrows and checkouts from the canonical chain. Each test reverts only blocks it created itself
 * (the anvil is shared by the run) and leaves the indexer caught up on the new branch.
 */
describe('escrow indexer: chain reorgs', () => {
  let t: TestApp;
  let chain: TestChain;
  let indexer: EscrowIndexer;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    indexer = t.app.get(EscrowIndexer);
  });
  afterAll(async () => {
    chain?.close();
    await t?.close();
  });

  const getEscrow = (party: Party, id: string) => t.http.get(`/api/v1/escrows/${id}`).set('X-Api-Key', party.org.key);

  /** Runs `inBranch` on a branch that is reverted afterwards (also when it fails), then mines `mine` blocks. */
  async function onOrphanedBranch<T>(inBranch: () => Promise<T>, mine = 3): Promise<T> {
    const snapshot = await chain.snapshot();
    let result: T;
    try {
      result = await inBranch();
    } finally {
      await chain.revert(snapshot);
      await chain.mine(mine);
    }
    return result;
  }

  /** The cursor row and whether the remembered hash of its block is the canonical one. */
  async function cursorState() {
    const [cursor] = await t.dataSource.query(`SELECT block_number::int AS n FROM chain_cursors WHERE name = 'escrow'`);
    const [block] = await t.dataSource.query('SELECT block_hash FROM chain_blocks WHERE block_number = $1', [cursor.n]);
    return { cursor: cursor.n as number, canonical: block?.block_hash === (await chain.provider.getBlock(cursor.n))?.hash };
  }

  async function fundedAndIndexed(seller: Party, buyer: Party) {
    const checkout = await createCheckout(t, seller.org, { amount: '9.00' });
    const { funding, terms } = await fundingTerms(t, checkout.id, buyer.wallet.address);
    await chain.fundWithAuthorization(buyer.wallet, terms, funding.termsSignature);
    const escrowId = (await indexUntilStatus(t, seller.org, checkout.id, 'funded')).escrowId as string;
    await pollToHead(t, chain);
    return { checkout, escrowId, key: terms.escrowKey };
  }

  it('a funding applied by the indexer and then reorged away: detected, the escrow is gone, the checkout open again, checkout.funding_reversed sent after checkout.funded; funding again works', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '11.00' });
    const { funding, terms } = await fundingTerms(t, checkout.id, buyer.wallet.address);
    const buyerBalance = await chain.usdcBalance(buyer.wallet.address);
    const before = await pollToHead(t, chain);
    const forkBlock = before.toBlock;

    const orphaned = await onOrphanedBranch(async () => {
      const fundTx = await chain.fundWithAuthorization(buyer.wallet, terms, funding.termsSignature);
      const session = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
      expect((await chain.provider.getTransactionReceipt(fundTx))!.blockNumber).toBeGreaterThan(forkBlock);
      expect((await cursorState()).cursor).toBeGreaterThan(forkBlock);
      return { fundTx, escrowId: session.escrowId as string };
    });
    expect(await chain.provider.getTransactionReceipt(orphaned.fundTx)).toBeNull();
    expect(await chain.headBlock()).toBeGreaterThan((await cursorState()).cursor);

    const pass = await indexer.pollOnce();
    expect(pass.reorgForkBlock).toBe(forkBlock);
    expect(pass.toBlock).toBe(await chain.headBlock());

    expect(await getCheckout(t, seller.org, checkout.id)).toMatchObject({ status: 'open', escrowId: null });
    expectError(await getEscrow(seller, orphaned.escrowId), 404, 'not_found');
    expect(await chainEventRows(t, orphaned.escrowId)).toEqual([]);
    expect((await chain.gateway.getOnChainEscrow(terms.escrowKey)).state).toBe('none');
    expect(await chain.usdcBalance(buyer.wallet.address)).toBe(buyerBalance);
    // Webhooks already written are not retracted; the merchant hears the reversal after them (DESIGN §22).
    const told = await checkoutEvents(t, checkout.id);
    expect(told.map((e) => [e.type, e.status])).toEqual([['checkout.funded', 'funded'], ['checkout.funding_reversed', 'open']]);
    expect(told[1].object).toMatchObject({ id: checkout.id, status: 'open', escrowId: null });
    expect(told[1].id).toBe(derivedEventId(`${terms.escrowKey}:funding_reversed:1`, WebhookEvent.CheckoutFundingReversed));
    expect(await cursorState()).toEqual({ cursor: pass.toBlock, canonical: true });

    // The checkout is payable again on the canonical chain, with the same signed terms.
    expect((await t.http.get(`/api/v1/checkout-sessions/${checkout.id}/funding-terms`)).status).toBe(200);
    const refundTx = await chain.fundWithAuthorization(buyer.wallet, terms, funding.termsSignature);
    const refunded = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(refunded.escrowId).not.toBe(orphaned.escrowId);
    expect((await getEscrow(seller, refunded.escrowId as string)).body).toMatchObject({ status: 'funded', amount: '11.00' });
    // After a reversal the funding is news again, whichever transaction carries it (a new event id).
    const events = await checkoutEvents(t, checkout.id);
    expect(events.map((e) => e.type)).toEqual(['checkout.funded', 'checkout.funding_reversed', 'checkout.funded']);
    expect(refundTx).toEqual(expect.any(String));

    const after = await indexer.pollOnce();
    expect(after.reorgForkBlock).toBeUndefined();
    expect(await cursorState()).toMatchObject({ canonical: true });
  });

  it('a later action reorged away is forgotten: the escrow is re-derived from its remaining events and the action can be repeated', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const { checkout, escrowId, key } = await fundedAndIndexed(seller, buyer);

    await onOrphanedBranch(async () => {
      const acceptTx = await chain.act(seller.wallet, 'accept', key);
      const res = await t.http.post(`/api/v1/escrows/${escrowId}/accept`).set('X-Api-Key', seller.org.key).send({ txHash: acceptTx });
      expect(res.body.status).toBe('accepted');
      await pollToHead(t, chain);
    });

    const pass = await indexer.pollOnce();
    expect(pass.reorgForkBlock).toEqual(expect.any(Number));
    const view = (await getEscrow(seller, escrowId)).body;
    expect(view.status).toBe('funded');
    expect(view.transactions.map((x: { action: string }) => x.action)).toEqual(['funded']);
    expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('funded');
    expect((await chain.gateway.getOnChainEscrow(key)).state).toBe('funded');

    const again = await chain.act(seller.wallet, 'accept', key);
    const res = await t.http.post(`/api/v1/escrows/${escrowId}/accept`).set('X-Api-Key', seller.org.key).send({ txHash: again });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('accepted');
    expect((await indexer.pollOnce()).reorgForkBlock).toBeUndefined();
  });

  it('an action the API applied ahead of the indexer and then reorged away is forgotten too', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const { checkout, escrowId, key } = await fundedAndIndexed(seller, buyer);
    const { cursor } = await cursorState();

    await onOrphanedBranch(async () => {
      const acceptTx = await chain.act(seller.wallet, 'accept', key);
      expect((await chain.provider.getTransactionReceipt(acceptTx))!.blockNumber).toBeGreaterThan(cursor);
      const res = await t.http.post(`/api/v1/escrows/${escrowId}/accept`).set('X-Api-Key', seller.org.key).send({ txHash: acceptTx });
      expect(res.body.status).toBe('accepted'); // applied by the API fast path; the indexer has not read that block
    });

    const pass = await indexer.pollOnce();
    expect(pass.reorgForkBlock).toBe(cursor); // indexing resumes where it was; only the fast path's event is forgotten
    expect((await getEscrow(seller, escrowId)).body.status).toBe('funded');
    expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('funded');
    expect((await chainEventRows(t, escrowId)).map((r) => r.action)).toEqual(['funded']);
    expect(await cursorState()).toEqual({ cursor: pass.toBlock, canonical: true });

    const again = await chain.act(seller.wallet, 'accept', key);
    const res = await t.http.post(`/api/v1/escrows/${escrowId}/accept`).set('X-Api-Key', seller.org.key).send({ txHash: again });
    expect(res.body.status).toBe('accepted');
    expect((await indexer.pollOnce()).reorgForkBlock).toBeUndefined();
  });

  it('a funding reorged away and mined again (same transaction): the same event id when no reorg was seen; else checkout.funding_reversed, then checkout.funded again', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '6.00' });
    const { funding, terms } = await fundingTerms(t, checkout.id, buyer.wallet.address);
    await pollToHead(t, chain);

    const first = await onOrphanedBranch(async () => {
      const fundTx = await chain.fundWithAuthorization(buyer.wallet, terms, funding.termsSignature);
      const raw = await chain.rpc<string>('eth_getRawTransactionByHash', [fundTx]);
      const session = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
      const [row] = await chainEventRows(t, session.escrowId as string);
      const orphanBlockHash = (await chain.provider.getTransactionReceipt(fundTx))!.blockHash;
      return { fundTx, raw, row, orphanBlockHash, events: await checkoutEvents(t, checkout.id) };
    }, 0);
    expect(first.events.map((e) => [e.type, e.id])).toEqual([['checkout.funded', derivedEventId(`${first.fundTx}:${terms.escrowKey}:funded`, WebhookEvent.CheckoutFunded)]]);

    // The same signed transaction is mined again on the canonical branch (as a node re-includes it).
    expect(await chain.rpc<string>('eth_sendRawTransaction', [first.raw])).toBe(first.fundTx);
    await chain.mine(3);
    const pass = await indexer.pollOnce();
    // anvil can mine the same transaction into a byte-identical block (same parent, contents and
    // second): then there is no reorg to see; any other block hash must be detected as one.
    const canonicalBlockHash = (await chain.provider.getTransactionReceipt(first.fundTx))!.blockHash;
    expect(pass.reorgForkBlock === undefined).toBe(canonicalBlockHash === first.orphanBlockHash);
    await pollToHead(t, chain);
    const session = await getCheckout(t, seller.org, checkout.id);
    expect(session.status).toBe('funded');
    const [row] = await chainEventRows(t, session.escrowId as string);
    expect(row.tx_hash).toBe(first.fundTx.toLowerCase());
    const events = await checkoutEvents(t, checkout.id);
    const fundedId = derivedEventId(`${row.tx_hash}:${terms.escrowKey}:funded`, WebhookEvent.CheckoutFunded);
    // A reorg the indexer saw took the funding off the chain for a while: the merchant heard the
    // reversal (DESIGN §22), then the funding again under a new id. None seen: one checkout.funded.
    expect(events.map((e) => [e.type, e.id])).toEqual(
      pass.reorgForkBlock === undefined
        ? [['checkout.funded', fundedId]]
        : [
            ['checkout.funded', fundedId],
            ['checkout.funding_reversed', derivedEventId(`${terms.escrowKey}:funding_reversed:1`, WebhookEvent.CheckoutFundingReversed)],
            ['checkout.funded', derivedEventId(`${row.tx_hash}:${terms.escrowKey}:funded:after-reversal-1`, WebhookEvent.CheckoutFunded)],
          ],
    );
    expect(events[0].id).toBe(first.events[0].id);

    // checkout.released and checkout.paid of one Released log: two ids, both derived from it.
    const releaseTx = await chain.act(buyer.wallet, 'release', terms.escrowKey);
    const released = await t.http
      .post(`/api/v1/escrows/${session.escrowId as string}/release`)
      .set('X-Api-Key', buyer.org.key)
      .set('Idempotency-Key', `release-${checkout.id}`)
      .send({ txHash: releaseTx, confirm: true });
    expect(released.status).toBe(200);
    const releaseRow = (await chainEventRows(t, session.escrowId as string)).find((r) => r.action === 'released')!;
    const source = `${releaseTx}:${terms.escrowKey}:${releaseRow.action}`;
    expect((await checkoutEvents(t, checkout.id)).slice(events.length).map((e) => [e.type, e.id])).toEqual([
      ['checkout.released', derivedEventId(source, WebhookEvent.CheckoutReleased)],
      ['checkout.paid', derivedEventId(source, WebhookEvent.CheckoutPaid)],
    ]);
    expect(derivedEventId(source, WebhookEvent.CheckoutReleased)).not.toBe(derivedEventId(source, WebhookEvent.CheckoutPaid));
  });

  it('a funding reorged away and mined again at another log position (another transfer ahead of it in the block): the first event keeps its id; the reversal and the funding again are told', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '5.00' });
    const { funding, terms } = await fundingTerms(t, checkout.id, buyer.wallet.address);
    const other = await chain.wallet({ usdc: 2n * USDC });
    await pollToHead(t, chain);

    const first = await onOrphanedBranch(async () => {
      const fundTx = await chain.fundWithAuthorization(buyer.wallet, terms, funding.termsSignature);
      const raw = await chain.rpc<string>('eth_getRawTransactionByHash', [fundTx]);
      const session = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
      const [row] = await chainEventRows(t, session.escrowId as string);
      return { fundTx, raw, row, events: await checkoutEvents(t, checkout.id) };
    }, 0);
    expect(first.events.map((e) => e.type)).toEqual(['checkout.funded']);

    // On the canonical branch a USDC transfer with a higher tip goes first in the block, so the
    // funding's logs sit at other indexes (as when a node re-includes it among other transactions).
    await chain.rpc('evm_setAutomine', [false]);
    try {
      await other.sendTransaction({ to: chain.usdc.address, data: USDC_IFACE.encodeFunctionData('transfer', [seller.wallet.address, USDC]), maxPriorityFeePerGas: 10n ** 10n, maxFeePerGas: 10n ** 11n });
      expect(await chain.rpc<string>('eth_sendRawTransaction', [first.raw])).toBe(first.fundTx);
      await chain.mine(1);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
    await chain.mine(2);
    await pollToHead(t, chain);
    const session = await getCheckout(t, seller.org, checkout.id);
    expect(session.status).toBe('funded');
    const [row] = await chainEventRows(t, session.escrowId as string);
    expect(row.tx_hash).toBe(first.fundTx.toLowerCase());
    expect(row.log_index).not.toBe(first.row.log_index);
    const events = await checkoutEvents(t, checkout.id);
    // The block at that height changed, so the indexer saw a reorg: reversal told, then funded again.
    expect(events.map((e) => e.type)).toEqual(['checkout.funded', 'checkout.funding_reversed', 'checkout.funded']);
    expect(events[0].id).toBe(first.events[0].id);
  });
});
