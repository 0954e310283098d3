import type { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Interface, Wallet } from 'ethers';
import { ChainTxError } from '@lib/chain';
import { RelayerService } from '../../src/chain/relayer/relayer.service';
import { startRelayerWorker } from '../support/agents';
import { createTestApp, type TestApp } from '../support/app';
import { TestChain, USDC } from '../support/chain';
import { RpcGate } from '../support/rpc-gate';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

/** Revert data a node answers eth_estimateGas with (Error(string)), as a paused token or a node that lies would. */
const REVERT_DATA = new Interface(['error Error(string)']).encodeErrorResult('Error', ['FiatTokenV2: authorization is used or canceled']);

/**
 * Issue 29 finding 3 (DESIGN §22 "Dead only when proven") and the flaky relay-live-intent case: a relay
 * is dead only when its intent's check (RelayIntentCheck, registered by the payments domain for
 * `payment`/`x402`) confirms it by a read of the chain at head − CONFIRMATIONS. Revert data from a node
 * alone (an estimate against the pending block, where the relay's own bytes may already sit) never ends a
 * relay. The relayer worker talks to anvil through an RPC gate.
 */
describe('relays dead only on a confirming read (issue 29 finding 3)', () => {
  let t: TestApp;
  let chain: TestChain;
  let gate: RpcGate;
  let worker: INestApplicationContext;
  const automine = (on: boolean) => chain.provider.send('evm_setAutomine', [on]);

  beforeAll(async () => {
    t = await createTestApp({ RELAYER_WAIT_MS: '8000' });
    chain = new TestChain();
    gate = await RpcGate.start(process.env.RPC_URL!);
    const saved = { RPC_URL: process.env.RPC_URL };
    Object.assign(process.env, { RPC_URL: gate.url });
    try {
      worker = await startRelayerWorker();
    } finally {
      Object.assign(process.env, saved);
    }
  });
  afterEach(async () => {
    gate.clearMethodRules();
    await automine(true);
  });
  afterAll(async () => {
    await worker?.close();
    await gate?.stop();
    await t?.close();
    chain?.close();
  });

  const rows = (purpose: string, reference: string): Promise<Array<{ id: string; status: string; error: string | null }>> =>
    t.dataSource.query(`SELECT id, status, error FROM relayer_transactions WHERE purpose = $1 AND reference = $2 ORDER BY created_at`, [purpose, reference]);
  const fills = (relayTxId: string): Promise<unknown[]> => t.dataSource.query(`SELECT id FROM relayer_transactions WHERE purpose = 'nonce-fill' AND reference = $1`, [relayTxId]);

  /** A payment-shaped relay: the payer's transferWithAuthorization of `value` to a fresh payee. */
  async function transferRelay(opts: { value?: bigint; validBefore?: bigint } = {}) {
    const payer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const payee = Wallet.createRandom().address;
    const auth = await chain.usdc.signTransferAuthorization(payer, {
      to: payee,
      value: opts.value ?? USDC,
      validBefore: opts.validBefore ?? BigInt((await chain.headTimestamp()) + 3600),
    });
    return { payer, payee, auth, req: { to: chain.usdc.address, data: chain.usdc.encodeTransferWithAuthorization(auth), purpose: 'payment', reference: randomUUID() } };
  }

  it('a transfer in the pool the node stops showing is not filled for revert data from an estimate (its own bytes used the authorization in the pending block); a resume: one row, one transfer', async () => {
    const relayer = t.app.get(RelayerService);
    const { payee, req } = await transferRelay();
    await automine(false);
    const first = await relayer.relay(req);
    // The node stops showing the pooled transaction (a load-balanced node behind the RPC URL), so the tender
    // takes it for dropped; the node estimates its call against its pending block, where the relay's own
    // bytes already used the authorization: revert data (anvil estimates at latest, so the gate answers it).
    gate.answerMethod('eth_getTransactionByHash', { kind: 'result', result: null });
    gate.answerMethod('eth_estimateGas', { kind: 'error', code: 3, message: 'execution reverted: FiatTokenV2: authorization is used or canceled', data: REVERT_DATA });
    // Proof of the fault: the tender asked for the estimate (twice: two passes) and got revert data.
    await waitFor(async () => (gate.hits.get('eth_estimateGas') ?? 0) >= 2, { timeoutMs: 30_000, label: 'the tender estimated the "dropped" relay twice' });
    // A resume of the intent while the transfer is unmined.
    const again = await relayer.relay(req).catch((err: Error) => err);
    gate.clearMethodRules();
    expect(again).toMatchObject({ relayTxId: first.relayTxId });
    expect(await fills(first.relayTxId)).toEqual([]);
    await automine(true);
    await chain.mine();
    await waitFor(async () => (await chain.usdcBalance(payee)) === USDC, { timeoutMs: 30_000, label: 'the transfer mined' });
    expect((await rows('payment', req.reference)).map((r) => r.status)).toEqual(['broadcast']);
  });

  it('revert data answered by the node while the authorization is unused keeps the relay queued; it is sent and mined once the node answers', async () => {
    const relayer = t.app.get(RelayerService);
    const { payee, payer, auth, req } = await transferRelay();
    gate.answerMethod('eth_estimateGas', { kind: 'error', code: 3, message: 'execution reverted: FiatTokenV2: authorization is used or canceled', data: REVERT_DATA });
    const outcome = await relayer.relay(req).catch((err: Error) => err);
    // Proof of the fault: the node answered the estimate with revert data, and the authorization is unused.
    expect(gate.hits.get('eth_estimateGas')).toBeGreaterThanOrEqual(1);
    expect(await chain.usdc.authorizationState(payer.address, auth.nonce)).toBe(false);
    expect(outcome).not.toBeInstanceOf(ChainTxError);
    expect((await rows('payment', req.reference)).map((r) => r.status)).toEqual(['queued']);
    gate.clearMethodRules();
    await waitFor(async () => (await chain.usdcBalance(payee)) === USDC, { timeoutMs: 30_000, label: 'the tender sent the queued relay and it was mined' });
    expect((await rows('payment', req.reference)).map((r) => r.status)).toEqual(['broadcast']);
  });

  it('an authorization used on chain is dead: the relay fails with the revert, no nonce used', async () => {
    const relayer = t.app.get(RelayerService);
    const { auth, req } = await transferRelay();
    // A third party used the authorization first.
    const other = await chain.wallet();
    await chain.mined(other.sendTransaction({ to: req.to, data: req.data }), 'the relayed call, sent by another wallet');
    expect(await chain.usdc.authorizationState(auth.from, auth.nonce)).toBe(true);
    const count0 = await chain.provider.getTransactionCount(chain.relayer.address, 'latest');
    await expect(relayer.relay(req)).rejects.toBeInstanceOf(ChainTxError);
    expect((await rows('payment', req.reference)).map((r) => r.status)).toEqual(['failed']);
    expect(await chain.provider.getTransactionCount(chain.relayer.address, 'latest')).toBe(count0);
  });

  it('an authorization its payer cancelled on chain is dead: the relay fails with the revert, no nonce used', async () => {
    const relayer = t.app.get(RelayerService);
    const { payer, auth, req } = await transferRelay();
    const submitter = await chain.wallet();
    await chain.mined(submitter.sendTransaction({ to: chain.usdc.address, data: await chain.usdc.encodeCancelAuthorization(payer, auth.nonce) }), 'cancelAuthorization');
    expect(await chain.usdc.authorizationState(auth.from, auth.nonce)).toBe(true);
    const count0 = await chain.provider.getTransactionCount(chain.relayer.address, 'latest');
    await expect(relayer.relay(req)).rejects.toBeInstanceOf(ChainTxError);
    expect((await rows('payment', req.reference)).map((r) => r.status)).toEqual(['failed']);
    expect(await chain.provider.getTransactionCount(chain.relayer.address, 'latest')).toBe(count0);
  });

  it('an authorization past validBefore is dead', async () => {
    const relayer = t.app.get(RelayerService);
    const { req } = await transferRelay({ validBefore: BigInt((await chain.headTimestamp()) - 1) });
    await expect(relayer.relay(req)).rejects.toBeInstanceOf(ChainTxError);
    expect((await rows('payment', req.reference)).map((r) => r.status)).toEqual(['failed']);
  });
});
