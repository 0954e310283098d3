import { Wallet } from 'ethers';
import { useAgentStack } from '../support/agents';
import type { TestApp } from '../support/app';
import { createCheckout, createParties, indexUntilStatus, Party, TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

type TypedData = { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; primaryType: string; message: Record<string, unknown> };
const sign = (wallet: Wallet, typedData: TypedData) =>
  wallet.signTypedData(typedData.domain, Object.fromEntries(Object.entries(typedData.types).filter(([k]) => k !== 'EIP712Domain')), typedData.message);
const gwei = (n: bigint) => '0x' + (n * 10n ** 9n).toString(16);

/**
 * Issue 29 finding 2 (DESIGN §22 "Refused sends stay queued and are sent by the tender"): a buyer
 * action the node refused for its fees (base fee above RELAYER_MAX_FEE_GWEI) answers 503 and stays
 * queued; once fees allow, the worker's tender sends it, with no caller asking again.
 */
describe('refused sends are sent by the tender (issue 29 finding 2)', () => {
  let t: TestApp;
  let chain: TestChain;
  let seller: Party;
  useAgentStack({ env: { RELAYER_WAIT_MS: '1000' } }, (s) => ({ t, chain } = s));
  beforeAll(async () => {
    ({ seller } = await createParties(t, chain, 0n));
  });
  afterEach(async () => {
    // Leave cheap blocks for the next test, whatever happened.
    await chain.rpc('anvil_setNextBlockBaseFeePerGas', ['0x1']);
    await chain.mine();
  });

  it('release while the base fee is above the cap → 503; fees restored → the escrow is released without any caller', async () => {
    const buyer = await chain.wallet({ usdc: 100n * USDC, eth: false });
    const checkout = await createCheckout(t, seller.org, { amount: '6.00' });
    const funding = await t.http.get(`/checkout/${checkout.id}/funding`).query({ buyer: buyer.address });
    const fm = funding.body.typedData.message as Record<string, string>;
    const funded = await t.http
      .post(`/checkout/${checkout.id}/relay`)
      .send({ buyer: buyer.address, validAfter: fm.validAfter, validBefore: fm.validBefore, nonce: fm.nonce, signature: await sign(buyer, funding.body.typedData) });
    expect(funded.status).toBe(200);
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    const state = (await t.http.get(`/checkout/${checkout.id}/state`)).body;
    const key = (await t.http.get(`/api/v1/escrows/${state.escrow.escrowId}`).set('X-Api-Key', seller.org.key)).body.chain.escrowKey as string;
    await chain.act(seller.wallet, 'accept', key);
    await chain.act(seller.wallet, 'markDelivered', key);
    await indexUntilStatus(t, seller.org, checkout.id, 'delivered');
    const sellerBefore = await chain.usdcBalance(seller.wallet.address);

    const typed = await t.http.get(`/checkout/${checkout.id}/actions/release`).query({ actor: buyer.address });
    const m = typed.body.typedData.message as { nonce: string; deadline: number };
    const body = { action: 'release', actor: buyer.address, nonce: m.nonce, deadline: Number(m.deadline), signature: await sign(buyer, typed.body.typedData) };
    // The fault: the base fee far above RELAYER_MAX_FEE_GWEI (100 gwei in tests), for this block and the next ones.
    await chain.rpc('anvil_setNextBlockBaseFeePerGas', [gwei(5_000n)]);
    await chain.mine();
    const refused = await t.http.post(`/checkout/${checkout.id}/actions`).send(body);
    expect(refused.status).toBe(503);
    expect(refused.body.code).toBe('unavailable');
    const reference = `${buyer.address.toLowerCase()}:${m.nonce.toLowerCase()}`;
    const [row]: Array<{ id: string; status: string; tx_hash: string | null }> = await t.dataSource.query(`SELECT id, status, tx_hash FROM relayer_transactions WHERE purpose = 'buyer-release' AND reference = $1`, [reference]);
    // Proof of the fault: nothing reached the chain, the row is queued.
    expect(row).toMatchObject({ status: 'queued', tx_hash: null });
    expect(await chain.usdcBalance(seller.wallet.address)).toBe(sellerBefore);

    // Fees come back down; no caller asks again.
    await chain.rpc('anvil_setNextBlockBaseFeePerGas', [gwei(1n)]);
    await chain.mine();
    await waitFor(async () => (await t.dataSource.query(`SELECT status FROM relayer_transactions WHERE id = $1`, [row.id]))[0].status === 'broadcast', {
      timeoutMs: 60_000,
      label: 'the tender sent the queued release',
    });
    await indexUntilStatus(t, seller.org, checkout.id, 'released');
    expect(await chain.usdcBalance(seller.wallet.address)).toBe(sellerBefore + 6n * USDC);
    const rows = await t.dataSource.query(`SELECT id FROM relayer_transactions WHERE purpose = 'buyer-release' AND reference = $1`, [reference]);
    expect(rows).toHaveLength(1);
  });
});
