import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { ExactEvmScheme as ClientExactEvmScheme } from '@x402/evm/exact/client';
import { randomUUID } from 'node:crypto';
import { privateKeyToAccount } from 'viem/accounts';
import { createAgent, createPayee, pay, paymentRows, settleUntil, type TestAgent } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { runAtChainTime, TestChain, USDC } from '../support/chain';
import { RpcGate } from '../support/rpc-gate';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

/**
 * Issue 29 finding 6: a payment's expiry is decided from authorizationState and the chain time read
 * at ONE block (head − CONFIRMATIONS). Read at two heads, a use mined between the reads looked like
 * "unused, and past validBefore": `failed expired` for a payment whose transfer is on chain (x402: a paid
 * retry answered 402 `settlement_failed` for an authorization still valid when used; DESIGN §18). The RPC
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

  it('x402: a use mined between the reads of a paid retry is not settlement_failed: the same header answers pending, then 200', async () => {
    const payee = await createPayee(t, chain);
    const payer = await chain.wallet({ usdc: 5n * USDC, eth: false });
    const url = `/api/v1/x402/challenge?to=${payee.handle}&amount=0.30`;
    const challenge = await t.http.get(url);
    expect(challenge.status).toBe(402);
    const client = new x402Client().register('eip155:31337', new ClientExactEvmScheme(privateKeyToAccount(payer.privateKey as `0x${string}`))).setSpendControls(false);
    // Signed at the chain's time (earlier files of a run move the shared anvil's clock ahead of this process's).
    const restoreClock = await runAtChainTime(chain);
    const payload = await client.createPaymentPayload(decodePaymentRequiredHeader(challenge.headers['payment-required'])).finally(restoreClock);
    const header = Buffer.from(JSON.stringify(payload)).toString('base64');
    // No relayer worker: the settlement's relay stays queued; the paid retry answers pending.
    const first = await t.http.get(url).set('PAYMENT-SIGNATURE', header);
    expect(first.status).toBe(402);
    expect(first.body.reason).toBe('pending');
    const [row] = await t.dataSource.query(`SELECT id FROM x402_settlements WHERE payer = $1`, [payer.address.toLowerCase()]);
    expect(row).toBeDefined();

    // The same header again; its block read waits at the gate.
    gate.holdMethod('eth_getBlockByNumber');
    const resumed = t.http.get(url).set('PAYMENT-SIGNATURE', header).then((r) => r);
    await waitFor(() => gate.held >= 1, { label: 'the paid retry at the gate' });
    // Meanwhile someone uses the authorization (mined while still valid), and the next block is past validBefore.
    const sender = await chain.wallet();
    const auth = payload.payload as { authorization: { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string }; signature: string };
    const data = chain.usdc.encodeTransferWithAuthorization({
      from: auth.authorization.from,
      to: auth.authorization.to,
      value: BigInt(auth.authorization.value),
      validAfter: BigInt(auth.authorization.validAfter),
      validBefore: BigInt(auth.authorization.validBefore),
      nonce: auth.authorization.nonce,
      signature: auth.signature,
    });
    const tx = await sender.sendTransaction({ to: chain.usdc.address, data });
    expect((await chain.provider.waitForTransaction(tx.hash))?.status).toBe(1);
    expect(await chain.usdc.authorizationState(payer.address, auth.authorization.nonce)).toBe(true);
    await chain.rpc('evm_setNextBlockTimestamp', [Number(auth.authorization.validBefore) + 1]);
    await chain.rpc('evm_mine');
    gate.open();

    const res = await resumed;
    // Still valid when it was used: never settlement_failed (DESIGN §18), pending until the indexer records the use.
    expect(res.body.reason).not.toBe('settlement_failed');
    expect([200, 402]).toContain(res.status);
    await settleUntil(t, async () => (await t.dataSource.query(`SELECT status FROM x402_settlements WHERE id = $1`, [row.id]))[0].status === 'settled', 'x402 settlement settled');
    const paid = await t.http.get(url).set('PAYMENT-SIGNATURE', header);
    expect(paid.status).toBe(200);
    expect(await chain.usdcBalance(payee.address)).toBe(300_000n);
  });
});
