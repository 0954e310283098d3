import { randomUUID } from 'node:crypto';
import type { INestApplicationContext } from '@nestjs/common';
import { startRelayerWorker } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { createOrg } from '../support/factories';
import { chainEventRows, checkoutEvents, cliJson, createCheckout, getCheckout, pollToHead, requireBuiltCli, runCli, TestChain, USDC } from '../support/chain';

// Each CLI run boots a Nest application context.
jest.setTimeout(120_000);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * `demo:pay <checkoutId>` (docs/architecture.md §9), run as the compiled CLI: a demo buyer wallet
 * (DEMO_BUYER_PRIVATE_KEY; here a fresh wallet holding USDC and no ETH) signs the EIP-3009
 * authorization for the checkout's signed terms and the relayer submits it, as the pay page does.
 */
describe('operator CLI demo:pay (dist/src/cli.js --json)', () => {
  let t: TestApp;
  let chain: TestChain;
  let relayerWorker: INestApplicationContext; // the CLI hands the funding to the relayer queue; this worker broadcasts it

  beforeAll(async () => {
    requireBuiltCli();
    t = await createTestApp();
    relayerWorker = await startRelayerWorker();
    chain = new TestChain();
  });
  afterAll(async () => {
    chain?.close();
    await relayerWorker?.close();
    await t?.close();
  });

  it('funds the checkout from the demo buyer wallet and prints one JSON object; the checkout is funded', async () => {
    const sellerWallet = await chain.wallet();
    const seller = await createOrg(t.app, { payoutAddress: sellerWallet.address });
    const buyer = await chain.wallet({ usdc: 100n * USDC, eth: false });
    const checkout = await createCheckout(t, seller, { amount: '25.00', escrowTemplateId: 'physical' });
    const env = { DEMO_BUYER_PRIVATE_KEY: buyer.privateKey };

    const run = await runCli(['demo:pay', checkout.id, '--json'], env);
    const out = cliJson(run);
    expect(run.code).toBe(0);
    expect(out).toEqual({
      txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      escrowId: expect.stringMatching(UUID),
      status: 'funded',
      checkoutSessionId: checkout.id,
      buyer: buyer.address,
    });

    expect(await getCheckout(t, seller, checkout.id)).toMatchObject({ status: 'funded', escrowId: out.escrowId });
    const escrow = await t.http.get(`/api/v1/escrows/${out.escrowId as string}`).set('X-Api-Key', seller.key);
    expect(escrow.body).toMatchObject({
      status: 'funded',
      amount: '25.00',
      escrowTemplateId: 'physical',
      inspectionWindowSeconds: 14 * 86_400,
      buyer: { address: buyer.address, you: false },
      seller: { address: sellerWallet.address, you: true },
    });
    expect(await chain.usdcBalance(buyer.address)).toBe(75n * USDC);
    expect(await chain.provider.getBalance(buyer.address)).toBe(0n); // gasless for the buyer
    // Sent through the relayer queue (nonce allocated in Postgres), not from the relayer key directly.
    const relayed = await t.dataSource.query('SELECT purpose, status, tx_hash, nonce FROM relayer_transactions WHERE reference = $1', [checkout.id]);
    expect(relayed).toEqual([{ purpose: 'demo-funding', status: 'broadcast', tx_hash: out.txHash, nonce: expect.any(String) }]);

    // The indexer reads the same log later and changes nothing.
    await pollToHead(t, chain);
    expect((await chainEventRows(t, out.escrowId as string)).map((r) => [r.action, r.tx_hash])).toEqual([['funded', out.txHash]]);
    expect((await checkoutEvents(t, checkout.id)).map((e) => e.type)).toEqual(['checkout.funded']);

    // Paying again is refused: the checkout is no longer open (exit 2, JSON error); nothing moves.
    const again = await runCli(['demo:pay', checkout.id, '--json'], env);
    expect(again.code).toBe(2);
    expect(cliJson(again)).toMatchObject({ code: 'invalid_request', details: { status: 'funded', allowed: ['open'] } });
    expect(await chain.usdcBalance(buyer.address)).toBe(75n * USDC);
  });

  it('demo:sign signs as the demo party without telling the API; reporting its hash moves the escrow', async () => {
    const sellerWallet = await chain.wallet();
    const buyerWallet = await chain.wallet({ usdc: 100n * USDC });
    const seller = await createOrg(t.app, { payoutAddress: sellerWallet.address });
    const buyer = await createOrg(t.app, { payoutAddress: buyerWallet.address });
    const env = { DEMO_BUYER_PRIVATE_KEY: buyerWallet.privateKey, DEMO_SELLER_PRIVATE_KEY: sellerWallet.privateKey };
    const checkout = await createCheckout(t, seller, { amount: '10.00' });
    const escrowId = cliJson(await runCli(['demo:pay', checkout.id, '--json'], env)).escrowId as string;

    const accept = await runCli(['demo:sign', escrowId, 'accept', '--json'], env);
    expect(accept.code).toBe(0);
    const signed = cliJson(accept);
    expect(signed).toEqual({ txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), from: sellerWallet.address, escrowId, action: 'accept' });
    // Signing alone changed nothing in the API (the indexer has not run).
    expect((await getCheckout(t, seller, checkout.id)).status).toBe('funded');
    const accepted = await t.http.post(`/api/v1/escrows/${escrowId}/accept`).set('X-Api-Key', seller.key).send({ txHash: signed.txHash });
    expect(accepted.status).toBe(200);
    expect(accepted.body.status).toBe('accepted');

    const release = cliJson(await runCli(['demo:sign', escrowId, 'release', '--json'], env));
    expect(release.from).toBe(buyerWallet.address);
    const released = await t.http
      .post(`/api/v1/escrows/${escrowId}/release`)
      .set('X-Api-Key', buyer.key)
      .set('Idempotency-Key', randomUUID())
      .send({ txHash: release.txHash, confirm: true });
    expect(released.status).toBe(200);
    expect(released.body.status).toBe('released');
    expect(await chain.usdcBalance(sellerWallet.address)).toBe(10n * USDC);

    const bad = await runCli(['demo:sign', escrowId, 'teleport', '--json'], env);
    expect(bad.code).toBe(2);
    expect(cliJson(bad).error).toContain('accept');
  });

  it('refuses an unknown checkout and a missing id with exit code 2', async () => {
    const unknown = await runCli(['demo:pay', randomUUID(), '--json']);
    expect(unknown.code).toBe(2);
    expect(cliJson(unknown)).toMatchObject({ code: 'not_found' });
    const missing = await runCli(['demo:pay', '--json']);
    expect(missing.code).toBe(2);
    expect(cliJson(missing).error).toContain('checkout');
  });
});
