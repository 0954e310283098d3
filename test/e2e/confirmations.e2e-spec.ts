import { EscrowIndexer } from '../../src/modules/escrow/escrow-indexer.service';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { createAgent, createPayee, pay, paymentRows, useAgentStack } from '../support/agents';
import type { TestApp } from '../support/app';
import { createCheckout, createParties, fundOnChain, getCheckout, TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';

jest.setTimeout(120_000);

/**
 * DESIGN §18 "Confirmations": with CONFIRMATIONS=2 a funding mined at block b counts once head ≥ b + 2,
 * for the indexer (the path that marks a checkout funded) as for the API's txHash verification
 * (escrow-indexer.e2e-spec covers the accept path with the same app setting).
 */
describe('confirmations: one rule for every reader of the chain', () => {
  let t: TestApp;
  let chain: TestChain;
  useAgentStack({ env: { CONFIRMATIONS: '2' } }, (s) => ({ t, chain } = s));

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

  it('an agent payment mined at block b stays submitted until head = b + 2, then succeeds (payment settlement)', async () => {
    const settlement = t.app.get(PaymentSettlement);
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 10n * USDC, policy: { dailyLimit: '100.00' } });
    const res = await pay(t, agent, { to: payee.handle, amount: '1.25' });
    expect(res.status).toBe(200);
    await waitFor(async () => (await chain.usdcBalance(payee.address)) === 1_250_000n, { label: 'the transfer mined' });
    const minedBlock = await chain.headBlock();

    let pass = await settlement.pollOnce();
    while (pass.toBlock < (await chain.headBlock()) - 2) pass = await settlement.pollOnce();
    expect(pass.toBlock).toBe(minedBlock - 2);
    expect((await paymentRows(t, agent.agentId)).map((p) => p.status)).toEqual(['submitted']);

    await chain.mine(1);
    await settlement.pollOnce();
    expect((await paymentRows(t, agent.agentId)).map((p) => p.status)).toEqual(['submitted']);

    await chain.mine(1);
    expect((await settlement.pollOnce()).toBlock).toBe(minedBlock);
    expect((await paymentRows(t, agent.agentId)).map((p) => p.status)).toEqual(['succeeded']);
  });
});
