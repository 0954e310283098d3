import type { INestApplicationContext } from '@nestjs/common';
import type Redis from 'ioredis';
import { randomUUID } from 'node:crypto';
import { REDIS } from '../../src/common/redis/redis.module';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createPayee, paymentRows, settleUntil, startRelayerWorker, TestAgent } from '../support/agents';
import { TestChain, USDC } from '../support/chain';

const PATH = '/api/v1/a2a/payment-submitted';

describe('POST /api/v1/a2a/payment-submitted (docs/api.md; docs/architecture.md §14)', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    worker = await startRelayerWorker();
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    chain?.close();
  });

  function submit(agent: TestAgent | null, body: unknown, key: string | null = `a2a-${randomUUID()}`) {
    const req = t.http.post(PATH);
    if (agent) req.set('X-Api-Key', agent.key);
    if (key !== null) req.set('Idempotency-Key', key);
    return req.send(body as object);
  }

  it('pays params.to params.amount as a Payment mode a2a with the taskId; the payee gets exactly the amount; the task is stored and cached 24 h', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '100.00' } });
    const taskId = `task-${randomUUID()}`;
    const res = await submit(agent, { jsonrpc: '2.0', id: 1, method: 'payment-submitted', params: { to: payee.handle, amount: '7.25', taskId } }, 'ps-1');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: {
        payment: { status: 'submitted', mode: 'a2a', to: payee.handle, amount: '7.25', taskId },
        task: { id: taskId, status: { state: 'TASK_STATE_WORKING', message: { metadata: { 'x402.payment.status': 'payment-submitted' } } } },
      },
    });
    const paymentId = res.body.result.payment.id as string;

    const shown = await t.http.get(`/api/v1/payments/${paymentId}`).set('X-Api-Key', agent.key);
    expect(shown.body).toMatchObject({ id: paymentId, mode: 'a2a', taskId });

    const stored: Array<{ state: string }> = await t.dataSource.query(`SELECT state FROM a2a_tasks WHERE id = $1 AND agent_id = $2`, [taskId, agent.agentId]);
    expect(stored).toEqual([{ state: 'TASK_STATE_WORKING' }]);
    const redis = t.app.get<Redis>(REDIS);
    const cacheKey = `${process.env.REDIS_PREFIX}:a2a:task:${agent.organizationId}:agent:${agent.agentId}:${taskId}`;
    expect(JSON.parse((await redis.get(cacheKey))!)).toMatchObject({ id: taskId });
    const ttl = await redis.ttl(cacheKey);
    expect(ttl).toBeGreaterThan(24 * 3600 - 60);
    expect(ttl).toBeLessThanOrEqual(24 * 3600);

    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect(await chain.usdcBalance(payee.address)).toBe(7_250_000n);

    // Replay with the same key: the same payment (now succeeded), no second transfer.
    const replay = await submit(agent, { jsonrpc: '2.0', id: 2, method: 'payment-submitted', params: { to: payee.handle, amount: '7.25', taskId } }, 'ps-1');
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ id: 2, result: { payment: { id: paymentId, status: 'succeeded' }, task: { status: { state: 'TASK_STATE_COMPLETED' } } } });
    // Same taskId, same terms, another key: that payment again.
    const sameTask = await submit(agent, { jsonrpc: '2.0', id: 3, params: { to: payee.handle.toUpperCase(), amount: '7.250', taskId } });
    expect(sameTask.status).toBe(200);
    expect(sameTask.body.result.payment.id).toBe(paymentId);
    // Same taskId, another amount → 422 idempotency_conflict.
    const conflict = await submit(agent, { jsonrpc: '2.0', id: 4, params: { to: payee.handle, amount: '8.00', taskId } });
    expect(conflict.status).toBe(422);
    expect(conflict.body).toMatchObject({ jsonrpc: '2.0', id: 4, error: { code: -32000, data: { code: 'idempotency_conflict' } } });
    // Same key, another task → 422 too.
    const keyConflict = await submit(agent, { jsonrpc: '2.0', id: 5, params: { to: payee.handle, amount: '7.25', taskId: 'other-task' } }, 'ps-1');
    expect(keyConflict.status).toBe(422);
    expect(await paymentRows(t, agent.agentId)).toHaveLength(1);
    expect(await chain.usdcBalance(payee.address)).toBe(7_250_000n);
  });

  it('without taskId: pays, task null; an agent slug is a payee too', async () => {
    const payeeAgent = await createAgent(t, chain);
    const agent = await createAgent(t, chain, { float: 5n * USDC });
    const res = await submit(agent, { jsonrpc: '2.0', id: 'abc', params: { to: payeeAgent.slug, amount: '1.00' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 'abc', result: { payment: { mode: 'a2a', taskId: null, toAddress: payeeAgent.signerAddress }, task: null } });
  });

  it('refusals: 401 without a key, 400 without Idempotency-Key, 403 policy_denied over policy, each a JSON-RPC error carrying our error body', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { perTransactionMax: '5.00', dailyLimit: '100.00' } });
    const body = { jsonrpc: '2.0', id: 9, params: { to: payee.handle, amount: '6.00' } };

    const noKey = await submit(null, body);
    expect(noKey.status).toBe(401);
    expect(noKey.body).toMatchObject({ jsonrpc: '2.0', id: 9, error: { code: -32000, message: expect.any(String), data: { code: 'unauthorized', error: expect.any(String), requestId: expect.any(String) } } });

    const noIdem = await submit(agent, body, null);
    expect(noIdem.status).toBe(400);
    expect(noIdem.body).toMatchObject({ id: 9, error: { code: -32602, data: { code: 'idempotency_required' } } });

    const over = await submit(agent, body, 'over-1');
    expect(over.status).toBe(403);
    expect(over.body).toMatchObject({ jsonrpc: '2.0', id: 9, error: { code: -32000, data: { code: 'policy_denied', details: { rule: 'per_transaction_limit' } } } });
    const again = await submit(agent, body, 'over-1');
    expect(again.status).toBe(403);
    expect(await paymentRows(t, agent.agentId)).toHaveLength(0);

    const merchantLike = await t.http.post(PATH).set('X-Api-Key', agent.key.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a'))).set('Idempotency-Key', 'k').send(body);
    expect(merchantLike.status).toBe(401);
  });

  it('bad envelopes → 400 with JSON-RPC -32600 / -32601 / -32602 and our error body in data', async () => {
    const agent = await createAgent(t, chain, { float: 5n * USDC });
    const params = { to: 'someone', amount: '1.00' };
    const cases: Array<[unknown, number, string | RegExp]> = [
      [{ jsonrpc: '1.0', id: 1, params }, -32600, 'jsonrpc'],
      [{ jsonrpc: '2.0', params }, -32600, 'id'],
      [{ jsonrpc: '2.0', id: 1.5, params }, -32600, 'id'],
      [{ jsonrpc: '2.0', id: 1 }, -32600, 'params'],
      [{ jsonrpc: '2.0', id: 1, params, extra: true }, -32600, 'extra'],
      [[{ jsonrpc: '2.0', id: 1, params }], -32600, /request object/],
      [{ jsonrpc: '2.0', id: 1, method: 'message/send', params }, -32601, 'method'],
      [{ jsonrpc: '2.0', id: 1, params: { to: 'someone' } }, -32602, 'params.amount'],
      [{ jsonrpc: '2.0', id: 1, params: { ...params, taskId: 'a b' } }, -32602, 'params.taskId'],
      [{ jsonrpc: '2.0', id: 1, params: { ...params, surprise: 1 } }, -32602, 'params.surprise'],
    ];
    for (const [body, rpcCode, field] of cases) {
      const res = await submit(agent, body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body).toMatchObject({ jsonrpc: '2.0', error: { code: rpcCode, data: { code: 'invalid_request' } } });
      const fields = (res.body.error.data.details?.fields ?? []) as Array<{ param: string }>;
      if (typeof field === 'string') expect(fields.map((f) => f.param)).toContain(field);
      else expect(res.body.error.message).toMatch(field);
    }
    const unparsable = await t.http.post(PATH).set('X-Api-Key', agent.key).set('Idempotency-Key', 'k1').set('Content-Type', 'application/json').send('{"jsonrpc":');
    expect(unparsable.status).toBe(400);
    expect(unparsable.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700, data: { code: 'invalid_request', requestId: expect.any(String) } } });
    const sdkUnparsable = await t.http.post('/api/v1/a2a').set('X-Api-Key', agent.key).set('Content-Type', 'application/json').send('{"jsonrpc":');
    expect(sdkUnparsable.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
    const amount = await submit(agent, { jsonrpc: '2.0', id: 1, params: { to: 'someone', amount: '0' } });
    expect(amount.status).toBe(400);
    expect(amount.body.error.data).toMatchObject({ code: 'invalid_request' });
    expect(await paymentRows(t, agent.agentId)).toHaveLength(0);
  });

  it('race: eight calls with one taskId and eight different Idempotency-Keys → one payment, one transfer', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '100.00' } });
    const taskId = `race-${randomUUID()}`;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => submit(agent, { jsonrpc: '2.0', id: i, params: { to: payee.handle, amount: '4.00', taskId } }, `race-key-${i}-${taskId}`)),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(new Set(results.map((r) => r.body.result.payment.id)).size).toBe(1);
    expect(await paymentRows(t, agent.agentId)).toHaveLength(1);
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect(await chain.usdcBalance(payee.address)).toBe(4n * USDC);
  });
});
