import { EscrowIndexer } from '../../src/modules/escrow/escrow-indexer.service';
import { createTestApp, TestApp } from '../support/app';
import { createCheckout, createParties, fundOnChain, getCheckout, TestChain } from '../support/chain';

jest.setTimeout(120_000);

/**
 * DESIGN §18 "Confirmations": with CONFIRMATIONS=2 a funding mined at block b counts once head ≥ b + 2,
 * for the indexer (the path that marks a checkout funded) as for the API's txHash verification
 * (escrow-indexer.e2e-spec covers the accept path with the same app setting).
 */
describe('confirmations: one rule for every reader of the chain', () => {
  let t: TestApp;
  let chain: TestChain;

  beforeAll(async () => {
    t = await createTestApp({ CONFIRMATIONS: '2' });
    chain = new TestChain();
  });
  afterAll(async () => {
    await t?.close();
    chain?.close();
  });

  it('a funded checkout stays open until its funding block is two blocks below head, then is funded', async () => {
    const indexer = t.app.get(EscrowIndexer);
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '3.00' });
    const txHash = await fundOnChain(t, chain, checkout.id, buyer.wallet);
    const fundBlock = (await chain.provider.getTransactionReceipt(txHash))!.blockNumber;
    expect(await chain.headBlock()).toBe(fundBlock);

    // Read everything the rule allows: up to head − 2 = fundBlock − 2.
    let pass = await indexer.pollOnce();
    while (pass.toBlock < (await chain.headBlock()) - 2) pass = await indexer.pollOnce();
    expect(pass.toBlock).toBe(fundBlock - 2);
    expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('open');

    await chain.mine(1); // one block on top: still short of two
    expect((await indexer.pollOnce()).toBlock).toBe(fundBlock - 1);
    expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('open');

    await chain.mine(1); // head − 2 = fundBlock
    expect((await indexer.pollOnce()).toBlock).toBe(fundBlock);
    expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('funded');
  });
});
