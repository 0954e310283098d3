import { randomUUID } from 'node:crypto';
import { createAgent, createPayee, pay, paymentRows, settleUntil, type TestAgent } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { TestChain, USDC } from '../support/chain';
import { RpcGate } from '../support/rpc-gate';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

/**
 * Issue 29 finding 6: a payment's expiry is decided from authorizationState and the chain time read
 * at ONE block (head − CONFIRMATIONS). Read at two heads, a use mined between the reads looked like
 * "unused, and past validBefore": `failed expired` for a payment whose transfer is on chain. The RPC
 * gate holds the api's block read while the test mines the use and then a block past validBefore.
 * Moves chain time forward: run it alone in its file.
 */
describe('expiry read at one block (issue 29 finding 6)', () => {
  let t: TestApp;
  let chain: TestChain;
  let gate: RpcGate;

  beforeAll(async () => {
    gate = await RpcGate.start(process.env.RPC_URL!);
    // No relayer worker: the payment's relay stays queued, its authorization signed and stored.
    t = await createTestApp({ RPC_URL: gate.url, RELAYER_WAIT_MS: '1000' });
    chain = new TestChain();
  });
  afterAll(async () => {
    chain?.close();
    await t?.close();
    await gate?.stop();
  });

  it('a use mined between the reads of a resume is not "failed expired": the payment settles succeeded', async () => {
    const payee = await createPayee(t, chain);
    const agent: TestAgent = await createAgent(t, chain, { float: 10n * USDC, policy: { dailyLimit: '100.00' } });
    const key = `pay-${randomUUID()}`;
    const first = await pay(t, agent, { to: payee.handle, amount: '2.00' }, key);
    expect(first.status).toBe(200);
    expect(first.body.status).toBe('pending');
    const [row] = await t.dataSource.query(`SELECT id, auth_nonce, auth_valid_before, auth_signature, from_address, to_address FROM payments WHERE id = $1`, [first.body.id]);
    expect(row.auth_signature).toEqual(expect.any(String));

    // The same key resumes the payment; its block read waits at the gate.
    gate.holdMethod('eth_getBlockByNumber');
    const resumed = pay(t, agent, { to: payee.handle, amount: '2.00' }, key).then((r) => r);
    await waitFor(() => gate.held >= 1, { label: 'the resume at the gate' });
    // Meanwhile someone uses the authorization (mined while still valid), and the next block is past validBefore.
    const sender = await chain.wallet();
    const data = chain.usdc.encodeTransferWithAuthorization({
      from: row.from_address,
      to: row.to_address,
      value: 2n * USDC,
      validAfter: 0n,
      validBefore: BigInt(row.auth_valid_before),
      nonce: row.auth_nonce,
      signature: row.auth_signature,
    });
    const tx = await sender.sendTransaction({ to: chain.usdc.address, data });
    const receipt = await chain.provider.waitForTransaction(tx.hash);
    expect(receipt?.status).toBe(1);
    expect(await chain.usdc.authorizationState(row.from_address, row.auth_nonce)).toBe(true);
    await chain.rpc('evm_setNextBlockTimestamp', [Number(row.auth_valid_before) + 1]);
    await chain.rpc('evm_mine');
    expect(await chain.headTimestamp()).toBeGreaterThanOrEqual(Number(row.auth_valid_before));
    gate.open();

    const res = await resumed;
    expect(res.status).toBe(200);
    expect(res.body.status).not.toBe('failed');
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect((await paymentRows(t, agent.agentId))[0]).toMatchObject({ status: 'succeeded', failure_reason: null, tx_hash: tx.hash.toLowerCase() });
    expect(await chain.usdcBalance(payee.address)).toBe(2n * USDC);
  });
});
