import { randomUUID } from 'node:crypto';
import type { Wallet } from 'ethers';
import { createTestApp, TestApp } from '../support/app';
import { createCheckout, createParties, fundOnChain, indexUntilStatus, Party, TestChain, USDC } from '../support/chain';
import { RefundsService } from '../../src/modules/refunds/refunds.service';
import { Refund } from '../../src/modules/refunds/refund.entity';
import { RelayerService } from '../../src/chain/relayer/relayer.service';
import { ChainAccess } from '../../src/chain/chain-access.service';
import { TransactionHost } from '../../src/database/transaction';

jest.setTimeout(180_000);

/**
 * Review F2 (DESIGN §21, §22): a relay's hash is stored only on a pending signature refund without
 * one; a stale sendSigned never replaces a succeeded refund's mined hash.
 * Review F4: USDC's EIP-712 domain (an RPC when not configured) is never read with a transaction open.
 * Review F1 (DESIGN §21, §18): a refund's expiry is decided from ONE read at the confirmation depth
 * (authorizationState and chain time of head − CONFIRMATIONS), never from the latest block. A branch
 * whose latest block is past validBefore with the nonce unused may still be replaced by one where the
 * refund's transfer was mined in time; and a refund failed `expired` whose transfer a reorg deeper than
 * CONFIRMATIONS shows mined in time succeeds after all (docs/decisions.md). Moves chain time forward:
 * its own file.
 */
describe('refund chain reads and writes (review F1, F2)', () => {
  let t: TestApp;
  let chain: TestChain;

  beforeAll(async () => {
    t = await createTestApp({ CONFIRMATIONS: '2', REFUND_VALIDITY_S: '300' });
    chain = new TestChain();
  });
  afterAll(async () => {
    await t?.close();
    chain?.close();
  });

  async function released(amount: string) {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    await chain.mine(2);
    const funded = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    const escrow = (await t.http.get(`/api/v1/escrows/${funded.escrowId as string}`).set('X-Api-Key', seller.org.key)).body;
    await chain.act(buyer.wallet, 'release', escrow.chain.escrowKey as string);
    await chain.mine(2);
    await indexUntilStatus(t, seller.org, checkout.id, 'released');
    return { seller, buyer, checkout };
  }
  const getRefund = async (seller: Party, id: string) => (await t.http.get(`/api/v1/refunds/${id}`).set('X-Api-Key', seller.org.key).expect(200)).body;
  const getCheckout = async (seller: Party, id: string) => (await t.http.get(`/api/v1/checkout-sessions/${id}`).set('X-Api-Key', seller.org.key).expect(200)).body;
  /** Creates a refund of `amount` on the seller's checkout under a fresh key (200 expected); its body. */
  const createRefund = async (seller: Party, checkoutId: string, amount: string) =>
    (await t.http.post(`/api/v1/checkout-sessions/${checkoutId}/refunds`).set('X-Api-Key', seller.org.key).set('Idempotency-Key', randomUUID()).send({ amount }).expect(200)).body;
  const sign = (wallet: Wallet, typedData: { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; message: Record<string, string> }) =>
    wallet.signTypedData(typedData.domain, typedData.types, typedData.message);

  /** Snapshots the chain, then mines one block at `validBefore` + 1 (a branch the test reverts). @returns the snapshot id. */
  async function branchPast(validBefore: number): Promise<string> {
    const snapshot = await chain.snapshot();
    await chain.rpc('evm_setNextBlockTimestamp', [validBefore + 1]);
    await chain.rpc('evm_mine');
    return snapshot;
  }
  /** Someone sends the refund's signed authorization in a block 5 s before validBefore, then past it and CONFIRMATIONS deep. @returns the lowercase hash. */
  async function useInTime(m: Record<string, string>, signature: string): Promise<string> {
    const validBefore = Number(m.validBefore);
    await chain.rpc('evm_setNextBlockTimestamp', [validBefore - 5]);
    const sender = await chain.wallet();
    const data = chain.usdc.encodeTransferWithAuthorization({ from: m.from, to: m.to, value: BigInt(m.value), validAfter: 0n, validBefore: BigInt(validBefore), nonce: m.nonce, signature });
    const tx = await sender.sendTransaction({ to: chain.usdc.address, data });
    expect((await chain.provider.waitForTransaction(tx.hash))?.status).toBe(1);
    await chain.increaseTime(60);
    await chain.mine(2);
    return tx.hash.toLowerCase();
  }
  const eventsOf = async (refundId: string) =>
    ((await t.dataSource.query(`SELECT type FROM outbox_events WHERE data->'object'->>'id' = $1 ORDER BY created_at, id`, [refundId])) as Array<{ type: string }>).map((e) => e.type);

  // First in the file: the service reads the domain once per process.
  it('the refund operations read USDC\'s EIP-712 domain before their transaction, never while the source row is locked', async () => {
    const { seller, checkout } = await released('10.00');
    const txHost = t.app.get(TransactionHost);
    const usdc = t.app.get(ChainAccess).usdc;
    const real = usdc.eip712Domain.bind(usdc);
    const inTx: boolean[] = [];
    const spy = jest.spyOn(usdc, 'eip712Domain').mockImplementation(() => {
      inTx.push(txHost.isTransactionActive());
      return real();
    });
    try {
      const refund = await createRefund(seller, checkout.id, '1.00');
      const done = await t.http
        .post(`/api/v1/refunds/${refund.id}/submit`)
        .set('X-Api-Key', seller.org.key)
        .set('Idempotency-Key', randomUUID())
        .send({ signature: await sign(seller.wallet, refund.typedData) });
      expect(done.status).toBe(200);
      await t.app.get(RefundsService).watchOnce();
    } finally {
      spy.mockRestore();
    }
    expect(inTx.length).toBeGreaterThan(0);
    expect(inTx.filter(Boolean)).toEqual([]);
  });

  it('a stale sendSigned (read before the watcher settled the refund) does not replace the mined hash: txHash stays, one refund.succeeded', async () => {
    const { seller, checkout } = await released('10.00');
    const refund = await createRefund(seller, checkout.id, '4.00');
    const signature = await sign(seller.wallet, refund.typedData);
    const m = refund.typedData.message;
    // What a sendSigned read before the chain moved: pending, signed, no hash yet.
    const stale = { ...(await t.dataSource.getRepository(Refund).findOneByOrFail({ id: refund.id })), status: 'pending', method: 'signature', signature, txHash: null } as Refund;
    // The authorization is used (the mined hash H2) and the watcher settles the refund from the chain.
    const sender = await chain.wallet();
    const data = chain.usdc.encodeTransferWithAuthorization({ from: m.from, to: m.to, value: BigInt(m.value), validAfter: 0n, validBefore: BigInt(m.validBefore), nonce: m.nonce, signature });
    const mined = (await sender.sendTransaction({ to: chain.usdc.address, data })).hash.toLowerCase();
    expect((await chain.provider.waitForTransaction(mined))?.status).toBe(1);
    await chain.mine(2);
    const watcher = t.app.get(RefundsService);
    await watcher.watchOnce();
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'succeeded', txHash: mined });

    // The stale call: its state read predates the use, and its relay answers the first hash H1, never mined.
    const neverMined = '0x' + 'e1'.repeat(32);
    const relayer = t.app.get(RelayerService);
    const usdc = t.app.get(ChainAccess).usdc;
    const spies = [
      jest.spyOn(usdc, 'authorizationState').mockResolvedValueOnce(false),
      jest.spyOn(relayer, 'relaysFor').mockResolvedValueOnce([]),
      jest.spyOn(relayer, 'relay').mockResolvedValueOnce({ relayTxId: randomUUID(), txHash: neverMined }),
    ];
    try {
      await watcher.sendSigned(stale, 0);
    } finally {
      spies.forEach((s) => s.mockRestore());
    }
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'succeeded', txHash: mined });
    await watcher.watchOnce();
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'succeeded', txHash: mined });
    expect((await getCheckout(seller, checkout.id)).refundedAmount).toBe('4.00');
    expect((await eventsOf(refund.id)).filter((e) => e !== 'refund.created')).toEqual(['refund.succeeded']);
  });

  it('the latest block past validBefore with the nonce unused is not "expired" while the confirmed block is not; the branch with the transfer mined in time then settles succeeded', async () => {
    const { seller, checkout } = await released('25.00');
    const refund = await createRefund(seller, checkout.id, '25.00');
    const signature = await sign(seller.wallet, refund.typedData);
    const validBefore = Number(refund.typedData.message.validBefore);
    const watcher = t.app.get(RefundsService);

    // A branch without the transfer: its latest block is past validBefore, the nonce unused there.
    const snapshot = await branchPast(validBefore);
    expect(await chain.headTimestamp()).toBeGreaterThanOrEqual(validBefore);
    await watcher.watchOnce();
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'requires_signature', failureReason: null });

    // That branch is replaced by one where the seller's authorization was used in time.
    await chain.revert(snapshot);
    const txHash = await useInTime(refund.typedData.message, signature);
    await watcher.watchOnce();
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'succeeded', failureReason: null, txHash });
    expect((await getCheckout(seller, checkout.id)).refundedAmount).toBe('25.00');
  });

  it('a deep reorg shows a failed (expired) refund mined in time: the watcher takes it to succeeded, refundedAmount grows although a second refund took its room, and that one can no longer be submitted', async () => {
    const { seller, checkout } = await released('25.00');
    const create = (amount: string) => createRefund(seller, checkout.id, amount);
    const refund = await create('25.00');
    const signature = await sign(seller.wallet, refund.typedData);
    const validBefore = Number(refund.typedData.message.validBefore);
    const watcher = t.app.get(RefundsService);

    // A branch where it expired unused, at the confirmation depth: failed (expired), its room taken by a second refund.
    const snapshot = await branchPast(validBefore);
    await chain.mine(2);
    await watcher.watchOnce();
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'failed', failureReason: 'expired' });
    const second = await create('25.00');

    // A reorg deeper than CONFIRMATIONS: on the new chain the authorization was used in time.
    await chain.revert(snapshot);
    const txHash = await useInTime(refund.typedData.message, signature);
    await watcher.watchOnce();
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'succeeded', failureReason: null, txHash });
    expect((await getCheckout(seller, checkout.id)).refundedAmount).toBe('25.00');
    expect((await eventsOf(refund.id)).filter((e) => e !== 'refund.created')).toEqual(['refund.failed', 'refund.succeeded']);
    // The second refund's room is gone: even with the money at hand, its signature is refused by the bound.
    await chain.mintUsdc(seller.wallet.address, 25n * USDC);
    const late = await t.http
      .post(`/api/v1/refunds/${second.id}/submit`)
      .set('X-Api-Key', seller.org.key)
      .set('Idempotency-Key', randomUUID())
      .send({ signature: await sign(seller.wallet, second.typedData) });
    expect([late.status, late.body.code]).toEqual([409, 'refund_exceeds_amount']);
    expect((await getRefund(seller, second.id)).status).toBe('requires_signature');
  });
});
