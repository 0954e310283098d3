import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { ExactEvmScheme as ClientExactEvmScheme } from '@x402/evm/exact/client';
import type { Wallet } from 'ethers';
import { randomUUID } from 'node:crypto';
import { privateKeyToAccount } from 'viem/accounts';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { AgentStack, createAgent, createPayee, pay, settleUntil, startAgentStack, type TestAgent } from '../support/agents';
import { runAtChainTime, USDC } from '../support/chain';
import { expectError } from '../support/errors';
import { createOrg } from '../support/factories';
import { RpcFault, RpcGate } from '../support/rpc-gate';
import { waitFor } from '../support/wait';

jest.setTimeout(240_000);

const BLOCK_OUT_OF_RANGE: RpcFault = { rpcError: { code: -32000, message: 'BlockOutOfRangeError: block height is 10 but requested was 12' } };
const HEADER_NOT_FOUND: RpcFault = { rpcError: { code: -32000, message: 'header not found' } };
const INTERNAL: RpcFault = { rpcError: { code: -32603, message: 'internal error' } };
const BAD_GATEWAY: RpcFault = { httpStatus: 502 };

/**
 * Issue 29 finding 5 (DESIGN §22 "Reads that fail answer 503"): a chain read the node fails is read
 * again once at a fresh head, then answered 503 `unavailable` with Retry-After; before a
 * reservation nothing is stored, after it the route answers the state as it stands; never 500. The
 * api reads the chain through an RPC gate that answers chosen methods with chosen errors (the
 * relayer worker and the test talk to anvil directly).
 */
describe('chain reads that fail answer 503 (issue 29 finding 5)', () => {
  let gate: RpcGate;
  let stack: AgentStack;

  beforeAll(async () => {
    gate = await RpcGate.start(process.env.RPC_URL!);
    stack = await startAgentStack({ env: { RPC_URL: gate.url, X402_MIN_AMOUNT: '0.01', X402_RECEIPT_WAIT_MS: '2000', RELAYER_WAIT_MS: '3000' }, listen: 'named' });
  });
  afterEach(() => {
    gate.clearFaults();
    gate.open();
  });
  afterAll(async () => {
    await stack?.close();
    await gate?.stop();
  });

  const expect503 = (res: { status: number; headers: Record<string, string>; body: Record<string, unknown>; text?: string }) => {
    expectError(res as never, 503, 'unavailable');
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
  };
  const paymentsOfKey = async (agent: TestAgent, key: string) => (await stack.t.dataSource.query(`SELECT id FROM payments WHERE agent_id = $1 AND idempotency_key = $2`, [agent.agentId, key])).length;
  /** The indexer's cursor at head, then one block more: the spend check reads eth_getLogs over (cursor, head]. */
  const cursorBehindHead = async () => {
    await stack.t.app.get(PaymentSettlement).pollOnce();
    await stack.chain.rpc('evm_mine');
  };

  it.each<[string, string, RpcFault]>([
    ['eth_getBalance (the relayer balance check)', 'eth_getBalance', INTERNAL],
    ['eth_call (the signer balance)', 'eth_call', HEADER_NOT_FOUND],
    ['eth_getLogs (unindexed uses, after a reorg)', 'eth_getLogs', BLOCK_OUT_OF_RANGE],
    ['eth_blockNumber (a 502 from the node)', 'eth_blockNumber', BAD_GATEWAY],
    ['eth_blockNumber (a dropped connection)', 'eth_blockNumber', 'drop'],
  ])('POST /payments, %s failing: 503 + Retry-After after one retry, nothing stored; the same key then pays', async (_, method, fault) => {
    const { t, chain } = stack;
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 10n * USDC, policy: { dailyLimit: '100.00' } });
    await cursorBehindHead();
    const key = `pay-${randomUUID()}`;
    gate.fail(method, fault);
    const res = await pay(t, agent, { to: payee.handle, amount: '1.00' }, key);
    expect503(res);
    expect(gate.failed[method]).toBeGreaterThanOrEqual(2); // the fault happened, and the read was retried
    expect(await paymentsOfKey(agent, key)).toBe(0);
    gate.clearFaults();
    const again = await pay(t, agent, { to: payee.handle, amount: '1.00' }, key);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('submitted');
    delete gate.failed[method];
  });

  it('POST /payments: a read the node fails after the reservation answers the payment as it stands (200 pending), never 500; the same key then submits it', async () => {
    const { t, chain } = stack;
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 10n * USDC, policy: { dailyLimit: '100.00' } });
    const key = `pay-${randomUUID()}`;
    // Before the reservation the spend check reads one block (the settlement cursor's hash, to see a
    // reorg no pass has taken back); after it only the resume reads blocks (the chain time for
    // validBefore, the expiry check). The first read passes, every later one fails.
    gate.fail('eth_getBlockByNumber', INTERNAL, Number.POSITIVE_INFINITY, 1);
    const res = await pay(t, agent, { to: payee.handle, amount: '1.00' }, key);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('pending');
    expect(gate.failed.eth_getBlockByNumber).toBeGreaterThanOrEqual(2);
    gate.clearFaults();
    const again = await pay(t, agent, { to: payee.handle, amount: '1.00' }, key);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: res.body.id, status: 'submitted' });
  });

  it('the known case: POST /payments right after a reorg (evm_snapshot / evm_revert under its pinned eth_getLogs) answers, not 500', async () => {
    const { t, chain } = stack;
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 10n * USDC, policy: { dailyLimit: '100.00' } });
    await t.app.get(PaymentSettlement).pollOnce();
    const snapshot = await chain.rpc<string>('evm_snapshot');
    const before = await chain.provider.getBlockNumber();
    for (let i = 0; i < 3; i++) await chain.rpc('evm_mine');
    gate.holdMethod('eth_getLogs');
    const res = pay(t, agent, { to: payee.handle, amount: '1.00' }).then((r) => r);
    await waitFor(() => gate.held >= 1, { label: 'the spend check pinned to the old head, at the gate' });
    expect(await chain.rpc('evm_revert', [snapshot])).toBe(true);
    expect(await chain.provider.getBlockNumber()).toBe(before); // the fault: the head moved back under the read
    gate.open();
    const answer = await res;
    expect(answer.status).toBe(200);
    expect(answer.body.status).toBe('submitted');
  });

  it('GET /balance and the payout balance: 503 + Retry-After while eth_call fails, then 200', async () => {
    const { t, chain } = stack;
    const agent = await createAgent(t, chain, { float: 3n * USDC });
    const wallet = await chain.wallet({ usdc: 2n * USDC });
    const org = await createOrg(t.app, { payoutAddress: wallet.address });
    gate.fail('eth_call', HEADER_NOT_FOUND);
    expect503(await t.http.get('/api/v1/balance').set('X-Api-Key', agent.key));
    expect503(await t.http.get('/api/v1/payout-balance').set('X-Api-Key', org.key));
    expect(gate.failed.eth_call).toBeGreaterThanOrEqual(4);
    gate.clearFaults();
    const balance = await t.http.get('/api/v1/balance').set('X-Api-Key', agent.key);
    expect(balance.status).toBe(200);
    expect(balance.body.onChainBalance).toBe('3.00');
    const payout = await t.http.get('/api/v1/payout-balance').set('X-Api-Key', org.key);
    expect(payout.status).toBe(200);
    expect(payout.body.usdc).toBe('2.00');
  });

  describe('x402', () => {
    const challengeUrl = (to: string, amount: string) => `${stack.base}/api/v1/x402/challenge?to=${to}&amount=${amount}`;
    const headerFor = async (payer: Wallet, url: string) => {
      const challenge = await fetch(url);
      const client = new x402Client().register('eip155:31337', new ClientExactEvmScheme(privateKeyToAccount(payer.privateKey as `0x${string}`))).setSpendControls(false);
      // Signed at the chain's time: earlier files of a run move the shared anvil's clock ahead of this process's.
      const restoreClock = await runAtChainTime(stack.chain);
      const payload = await client.createPaymentPayload(decodePaymentRequiredHeader(challenge.headers.get('payment-required')!)).finally(restoreClock);
      return Buffer.from(JSON.stringify(payload)).toString('base64');
    };
    const settlementsOf = async (payer: string) => (await stack.t.dataSource.query(`SELECT status FROM x402_settlements WHERE payer = $1`, [payer.toLowerCase()])) as Array<{ status: string }>;

    it('verification whose reads the node fails: 503 + Retry-After (not a 402 refusal), nothing reserved; the same header then pays', async () => {
      const { t, chain } = stack;
      const payee = await createPayee(t, chain);
      const payer = await chain.wallet({ usdc: 5n * USDC, eth: false });
      const url = challengeUrl(payee.handle, '0.50');
      const header = await headerFor(payer, url);
      gate.fail('eth_call', HEADER_NOT_FOUND);
      const res = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await res.json()) as { code: string }).code).toBe('unavailable');
      expect(gate.failed.eth_call).toBeGreaterThanOrEqual(2);
      expect(await settlementsOf(payer.address)).toEqual([]);
      gate.clearFaults();
      const paid = await waitFor(async () => {
        const r = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
        return r.status === 200 ? r : r.status === 402 && ((await r.json()) as { reason: string }).reason === 'pending' ? null : Promise.reject(new Error(`unexpected ${r.status}`));
      }, { timeoutMs: 30_000, intervalMs: 500, label: 'the same header answered 200' });
      expect(paid.status).toBe(200);
      expect(await chain.usdcBalance(payee.address)).toBe(500_000n);
    });

    it('after the reservation the node failing its receipt and head reads answers 402 pending with Retry-After, never 500; the same header later answers 200', async () => {
      const { t, chain } = stack;
      const payee = await createPayee(t, chain);
      const payer = await chain.wallet({ usdc: 5n * USDC, eth: false });
      const url = challengeUrl(payee.handle, '0.40');
      const header = await headerFor(payer, url);
      gate.fail('eth_blockNumber', BLOCK_OUT_OF_RANGE);
      gate.fail('eth_getTransactionReceipt', INTERNAL);
      const res = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
      expect(res.status).toBe(402);
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await res.json()) as { reason: string }).reason).toBe('pending');
      expect((gate.failed.eth_blockNumber ?? 0) + (gate.failed.eth_getTransactionReceipt ?? 0)).toBeGreaterThan(0);
      expect(await settlementsOf(payer.address)).toEqual([{ status: 'pending' }]);
      gate.clearFaults();
      const paid = await waitFor(async () => {
        const r = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
        return r.status === 200 ? r : null;
      }, { timeoutMs: 30_000, intervalMs: 500, label: 'the same header answered 200' });
      expect(paid.status).toBe(200);
    });
  });

  it('done when: on a chain mining every 2 s, no answer under these faults is 500 and every 503 carries Retry-After', async () => {
    const { t, chain } = stack;
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
    const wallet = await chain.wallet();
    const org = await createOrg(t.app, { payoutAddress: wallet.address });
    await chain.rpc('evm_setAutomine', [false]);
    await chain.rpc('evm_setIntervalMining', [2]);
    const answers: Array<{ what: string; status: number; retryAfter: string | undefined }> = [];
    try {
      const faults: Array<[string, RpcFault]> = [
        ['eth_getLogs', BLOCK_OUT_OF_RANGE],
        ['eth_call', HEADER_NOT_FOUND],
        ['eth_getBalance', INTERNAL],
        ['eth_blockNumber', BAD_GATEWAY],
        ['eth_getBlockByNumber', INTERNAL],
        ['eth_getTransactionReceipt', 'drop'],
      ];
      for (const [method, fault] of faults) {
        gate.clearFaults();
        gate.fail(method, fault);
        const key = `pay-${randomUUID()}`;
        const calls: Array<[string, Promise<{ status: number; headers: Record<string, string> }>]> = [
          [`pay ${method}`, pay(t, agent, { to: payee.handle, amount: '0.10' }, key).then((r) => r)],
          [`balance ${method}`, t.http.get('/api/v1/balance').set('X-Api-Key', agent.key).then((r) => r)],
          [`payout ${method}`, t.http.get('/api/v1/payout-balance').set('X-Api-Key', org.key).then((r) => r)],
        ];
        for (const [what, call] of calls) {
          const r = await call;
          answers.push({ what, status: r.status, retryAfter: r.headers['retry-after'] });
        }
        gate.clearFaults();
        const retried = await pay(t, agent, { to: payee.handle, amount: '0.10' }, key);
        answers.push({ what: `pay retry ${method}`, status: retried.status, retryAfter: retried.headers['retry-after'] });
      }
    } finally {
      gate.clearFaults();
      await chain.rpc('evm_setIntervalMining', [0]);
      await chain.rpc('evm_setAutomine', [true]);
    }
    expect(answers.filter((a) => a.status >= 500 && a.status !== 503)).toEqual([]);
    expect(answers.filter((a) => a.status === 503 && !a.retryAfter)).toEqual([]);
    expect(answers.filter((a) => a.what.startsWith('pay retry')).map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(answers.some((a) => a.status === 503)).toBe(true); // the faults were felt
    await settleUntil(t, async () => (await t.dataSource.query(`SELECT count(*)::int AS n FROM payments WHERE agent_id = $1 AND status <> 'succeeded'`, [agent.agentId]))[0].n === 0);
  });
});
