import { escrowKeyFromId } from '@lib/chain';
import { EscrowIndexer } from '../../src/modules/escrow/escrow-indexer.service';
import { type TestApp } from '../support/app';
import { useAgentStack } from '../support/agents';
import { createCheckout, createParties, fundOnChain, indexUntilStatus, type Party, TestChain, USDC } from '../support/chain';
import { relayIntentProbe } from '../support/relay-intent';
import { waitFor } from '../support/wait';

jest.setTimeout(120_000);

/**
 * The worker's auto-release pass sends every due release first and then waits for them together
 * (each at most 60 s from its own relay): a pass of N releases costs one mining wait, not N. The
 * proof on the real chain, with mining stopped: all three releases of one pass are in the pool at
 * once, before any is mined (a pass that waited for each release before sending the next held one
 * in the pool for its whole 60 s wait); one block then releases all three, each once.
 */
describe('auto-release: one pass relays every due release, then waits for them together', () => {
  let t: TestApp;
  let chain: TestChain;
  useAgentStack({}, (s) => ({ t, chain } = s));
  const probe = relayIntentProbe(
    () => t,
    () => chain,
  );
  afterEach(() => probe.automine(true));

  /** A checkout escrow funded, accepted and delivered, with a one-hour inspection window. */
  async function delivered(): Promise<{ seller: Party; escrowId: string; escrowKey: string }> {
    const { seller, buyer } = await createParties(t, chain, 10n * USDC);
    const checkout = await createCheckout(t, seller.org, { amount: '5.00', escrowTemplateId: 'custom', metadata: { inspectionWindowHours: 1 } });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    const escrowId = (await indexUntilStatus(t, seller.org, checkout.id, 'funded')).escrowId as string;
    const escrowKey = escrowKeyFromId(checkout.id);
    await chain.act(seller.wallet, 'accept', escrowKey);
    await chain.act(seller.wallet, 'markDelivered', escrowKey);
    await indexUntilStatus(t, seller.org, checkout.id, 'delivered');
    return { seller, escrowId, escrowKey };
  }

  it('three due escrows: three releases in the pool at once, then one block releases all three, each by one transaction', async () => {
    const escrows = [await delivered(), await delivered(), await delivered()];
    const indexer = t.app.get(EscrowIndexer);
    // Mining on: releases what earlier files left due, so the pass below waits only on these three.
    expect(await indexer.autoReleaseDue()).toEqual(expect.not.arrayContaining(escrows.map((e) => e.escrowId)));
    await chain.increaseTime(2 * 3600);
    const before = await chain.balances(...escrows.map((e) => e.seller.wallet.address));

    await probe.automine(false);
    const pass = indexer.autoReleaseDue();
    // The fault's precondition: nothing is mined while the pass runs, and all three releases wait in the pool together.
    await waitFor(async () => (await Promise.all(escrows.map((e) => probe.pooledWith(e.escrowKey)))).every((n) => n === 1), {
      timeoutMs: 30_000,
      label: 'the three releases in the pool at once',
      describe: async () => Promise.all(escrows.map((e) => probe.pooledWith(e.escrowKey))),
    });
    for (const e of escrows) expect((await chain.gateway.getOnChainEscrow(e.escrowKey)).state).toBe('delivered');
    const head = await chain.headBlock();
    await chain.mine();
    await probe.automine(true);

    expect(await pass).toEqual(expect.arrayContaining(escrows.map((e) => e.escrowId)));
    for (const e of escrows) {
      const [row] = await probe.rows('auto-release', e.escrowId);
      expect(row.status).not.toBe('failed');
      const receipt = await chain.provider.getTransactionReceipt(row.tx_hash!);
      expect(receipt).toMatchObject({ status: 1, blockNumber: head + 1 });
      expect(await probe.rows('auto-release', e.escrowId)).toHaveLength(1);
      expect((await chain.gateway.getOnChainEscrow(e.escrowKey)).state).toBe('released');
    }
    expect(await chain.balances(...escrows.map((e) => e.seller.wallet.address))).toEqual(before.map((b) => b + 5n * USDC));
  });
});
