import { randomUUID } from 'node:crypto';
import type { INestApplicationContext } from '@nestjs/common';
import { Contract, Wallet } from 'ethers';
import { TestUSDCArtifact } from '@lib/contracts';
import { anvilKey } from '@lib/chain';
import { EscrowIndexer } from '../../src/modules/escrow/escrow-indexer.service';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { createAgent, createPayee, pay, paymentRows, settleUntil, startRelayerWorker } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import {
  cliJson,
  createCheckout,
  createParties,
  fundOnChain,
  getCheckout,
  indexUntilStatus,
  Party,
  requireBuiltCli,
  runCli,
  TestChain,
  USDC,
} from '../support/chain';
import { expectError } from '../support/errors';

jest.setTimeout(180_000);

type TypedData = { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; primaryType: string; message: Record<string, unknown> };

function sign(wallet: Wallet, typedData: TypedData): Promise<string> {
  const types = Object.fromEntries(Object.entries(typedData.types).filter(([k]) => k !== 'EIP712Domain'));
  return wallet.signTypedData(typedData.domain, types, typedData.message);
}

/**
 * USDC as it really is (DESIGN §18, docs/decisions.md): the issuer's blacklist and global pause, on the run's
 * TestUSDC (the deployer holds the blacklister and pauser roles). A blacklisted seller never strands an
 * escrow: the release reverts, nothing is marked released, a dispute lets the arbiter refund the buyer. A
 * paused token refuses a relay with 503 `unavailable` before anything is stored or sent, and the same
 * signature funds the checkout once unpaused.
 */
describe('USDC issuer controls: blacklisted seller, paused token', () => {
  let t: TestApp;
  let chain: TestChain;
  let relayerWorker: INestApplicationContext;
  let issuer: Contract;

  beforeAll(async () => {
    requireBuiltCli();
    t = await createTestApp();
    chain = new TestChain();
    relayerWorker = await startRelayerWorker();
    issuer = new Contract(chain.usdc.address, TestUSDCArtifact.abi, new Wallet(anvilKey('deployer'), chain.provider));
  });
  afterAll(async () => {
    if (issuer && (await issuer.paused())) await chain.mined(issuer.getFunction('unpause')(), 'unpause');
    chain?.close();
    await relayerWorker?.close();
    await t?.close();
  });

  const escrowOf = async (party: Party, checkoutId: string) => {
    const escrowId = (await getCheckout(t, party.org, checkoutId)).escrowId as string;
    const view = (await t.http.get(`/api/v1/escrows/${escrowId}`).set('X-Api-Key', party.org.key)).body;
    return { escrowId, key: view.chain.escrowKey as string, status: view.status as string };
  };

  it('a seller blacklisted before release: every release reverts, the escrow stays delivered, the arbiter refunds the buyer after a dispute', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '30.00', escrowTemplateId: 'custom', metadata: { inspectionWindowHours: 1 } });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    const { escrowId, key } = await escrowOf(seller, checkout.id);
    await chain.act(seller.wallet, 'accept', key);
    await chain.act(seller.wallet, 'markDelivered', key);
    await indexUntilStatus(t, seller.org, checkout.id, 'delivered');
    const buyerAfterFunding = await chain.usdcBalance(buyer.wallet.address);

    await chain.mined(issuer.getFunction('blacklist')(seller.wallet.address), 'blacklist');
    try {
      // The buyer's own release: refused at estimate; a forced one is mined and reverts, and the API refuses its hash.
      await expect(chain.act(buyer.wallet, 'release', key)).rejects.toMatchObject({ errorArgs: ['Blacklistable: account is blacklisted'] });
      const reverted = await chain.sendUnchecked(buyer.wallet, 'release', key);
      expect((await chain.provider.getTransactionReceipt(reverted))!.status).toBe(0);
      const refused = await t.http
        .post(`/api/v1/escrows/${escrowId}/release`)
        .set('X-Api-Key', buyer.org.key)
        .set('Idempotency-Key', randomUUID())
        .send({ txHash: reverted, confirm: true });
      expect(expectError(refused, 400, 'invalid_request')).toMatchObject({ reason: 'failed' });

      // The pay page's signed release: refused before anything is relayed, with the issuer's reason.
      const typed = await t.http.get(`/checkout/${checkout.id}/actions/release`).query({ actor: buyer.wallet.address });
      expect(typed.status).toBe(200);
      const m = typed.body.typedData.message as { nonce: string; deadline: number };
      const relayed = await t.http
        .post(`/checkout/${checkout.id}/actions`)
        .send({ action: 'release', actor: buyer.wallet.address, nonce: m.nonce, deadline: Number(m.deadline), signature: await sign(buyer.wallet, typed.body.typedData) });
      expect(expectError(relayed, 400, 'invalid_request')).toMatchObject({ reason: 'address_blocked' });

      // The worker's auto-release after the inspection window: not released, not stuck in a false state.
      await chain.increaseTime(2 * 3600);
      expect(await t.app.get(EscrowIndexer).autoReleaseDue()).not.toContain(escrowId);
      expect((await chain.gateway.getOnChainEscrow(key)).state).toBe('delivered');
      expect((await escrowOf(seller, checkout.id)).status).toBe('delivered');
      expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('delivered');

      // Not stuck: the buyer disputes, the arbiter (operator CLI) refunds the buyer.
      await chain.act(buyer.wallet, 'dispute', key);
      await indexUntilStatus(t, seller.org, checkout.id, 'disputed');
      const resolved = await runCli(['escrow:resolve', escrowId, '--to', 'buyer', '--json']);
      expect(resolved.code).toBe(0);
      expect(cliJson(resolved)).toMatchObject({ status: 'refunded' });
      await indexUntilStatus(t, seller.org, checkout.id, 'refunded');
      expect(await chain.usdcBalance(buyer.wallet.address)).toBe(buyerAfterFunding + 30n * USDC);
      expect(await chain.usdcBalance(seller.wallet.address)).toBe(0n);
    } finally {
      await chain.mined(issuer.getFunction('unBlacklist')(seller.wallet.address), 'unBlacklist');
    }
  });

  it('a paused token: the funding relay answers 503 unavailable and stores nothing; the same signature funds the checkout once unpaused', async () => {
    const { seller } = await createParties(t, chain, 0n);
    const buyer = await chain.wallet({ usdc: 50n * USDC, eth: false });
    const checkout = await createCheckout(t, seller.org, { amount: '20.00' });
    const funding = await t.http.get(`/checkout/${checkout.id}/funding`).query({ buyer: buyer.address });
    expect(funding.status).toBe(200);
    const typedData = funding.body.typedData as TypedData;
    const msg = typedData.message as Record<string, string>;
    const body = { buyer: buyer.address, validAfter: msg.validAfter, validBefore: msg.validBefore, nonce: msg.nonce, signature: await sign(buyer, typedData) };
    const relayRows = async () =>
      Number((await t.dataSource.query(`SELECT count(*)::int AS n FROM checkout_relays WHERE checkout_session_id = $1`, [checkout.id]))[0].n);

    await chain.mined(issuer.getFunction('pause')(), 'pause');
    try {
      const refused = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
      expect(expectError(refused, 503, 'unavailable')).toMatchObject({ reason: 'token_paused' });
      expect(refused.headers['retry-after']).toBe('60');
      expect(await relayRows()).toBe(0);
      expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('open');
      expect(await chain.usdcBalance(buyer.address)).toBe(50n * USDC);
    } finally {
      await chain.mined(issuer.getFunction('unpause')(), 'unpause');
    }

    const relayed = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    expect(relayed.status).toBe(200);
    expect(relayed.body).toMatchObject({ status: 'broadcast', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(await chain.usdcBalance(buyer.address)).toBe(30n * USDC);
  });

  it('a paused token: an agent payment is not failed; it stays pending and settles once after the pause', async () => {
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '100.00' } });
    const payee = await createPayee(t, chain);

    await chain.mined(issuer.getFunction('pause')(), 'pause');
    let paymentId: string;
    try {
      const res = await pay(t, agent, { to: payee.handle, amount: '7.00' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'pending' });
      paymentId = res.body.id as string;
      // The indexer and the sweep during the pause fail nothing.
      const settlement = t.app.get(PaymentSettlement);
      await settlement.pollOnce();
      await settlement.sweepOnce(0);
      expect((await paymentRows(t, agent.agentId)).map((p) => p.status)).toEqual(['pending']);
      expect(await chain.usdcBalance(payee.address)).toBe(0n);
    } finally {
      await chain.mined(issuer.getFunction('unpause')(), 'unpause');
    }

    await t.app.get(PaymentSettlement).sweepOnce(0);
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect((await paymentRows(t, agent.agentId)).map((p) => [p.id, p.status])).toEqual([[paymentId, 'succeeded']]);
    expect(await chain.usdcBalance(payee.address)).toBe(7n * USDC);
  });
});
