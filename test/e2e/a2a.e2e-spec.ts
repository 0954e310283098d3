import type { INestApplicationContext } from '@nestjs/common';
import { Message, SendMessageRequest, Task, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { REDIS } from '../../src/common/redis/redis.module';
import { X402_EXTENSION_URI } from '../../src/transports/a2a/a2a-card.service';
import { A2aOperations, SUBMIT_A2A_PAYMENT } from '../../src/transports/a2a/a2a.operations';
import { PaymentSubmittedParamsDto } from '../../src/transports/a2a/dto/a2a.dto';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createPayee, paymentRows, settleUntil, startRelayerWorker, TestAgent } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { createOrg } from '../support/factories';
import { callTool, McpClients } from '../support/mcp-client';
import { freePort } from '../support/processes';

/** A free local port (so API_BASE_URL, which the card advertises, can name it before the app listens). */
/** An SDK client (ClientFactory.createFromUrl: card from /.well-known/agent-card.json) sending `key` on every JSON-RPC call. */
function clientFor(base: string, key: string) {
  const authed: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), 'x-api-key': key } });
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: authed })] }));
  return factory.createFromUrl(base);
}

function userMessage(data: Record<string, unknown>, extra: { taskId?: string; contextId?: string; metadata?: Record<string, unknown> } = {}): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data, mediaType: 'application/json' }], ...extra },
    configuration: { blocking: true },
  });
}

function stateOf(task: Task): string {
  return (Task.toJSON(task) as { status: { state: string } }).status.state;
}

function statusMeta(task: Task): Record<string, unknown> {
  return ((Task.toJSON(task) as { status: { message?: { metadata?: Record<string, unknown> } } }).status.message?.metadata ?? {}) as Record<string, unknown>;
}

describe('A2A: agent card and the SDK JSON-RPC endpoint (docs/architecture.md §14)', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;
  let base: string;
  const mcp = new McpClients(() => `${base}/mcp`);
  afterAll(() => mcp.closeAll()); // before the app's close (after-hooks run in declaration order)

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ API_BASE_URL: base });
    await t.app.listen(port, '127.0.0.1');
    chain = new TestChain();
    worker = await startRelayerWorker();
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    chain?.close();
  });

  it('serves the same v1.0 card at /api/v1/a2a/agent-card, /.well-known/agent.json and /.well-known/agent-card.json; the SDK resolver reads it', async () => {
    const bodies = await Promise.all(['/api/v1/a2a/agent-card', '/.well-known/agent.json', '/.well-known/agent-card.json'].map((p) => fetch(base + p).then(async (r) => ({ status: r.status, text: await r.text() }))));
    for (const b of bodies) expect(b.status).toBe(200);
    expect(bodies[1].text).toBe(bodies[0].text);
    expect(bodies[2].text).toBe(bodies[0].text);
    const card = JSON.parse(bodies[0].text);
    expect(card.supportedInterfaces).toEqual([
      { url: `${base}/api/v1/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${base}/api/v1/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    expect(card.capabilities.extensions).toEqual([expect.objectContaining({ uri: X402_EXTENSION_URI })]);
    expect(card.skills.map((s: { id: string }) => s.id)).toEqual(['pay', 'create-checkout']);
    expect(card.securitySchemes.bearer).toEqual({ httpAuthSecurityScheme: expect.objectContaining({ scheme: 'Bearer' }) });
    const resolved = await new DefaultAgentCardResolver().resolve(base);
    expect(resolved.skills.map((s) => s.id)).toEqual(['pay', 'create-checkout']);
    expect(resolved.supportedInterfaces[0].url).toBe(`${base}/api/v1/a2a`);
    const legacy = await new DefaultAgentCardResolver().resolve(base, '/.well-known/agent.json');
    expect(legacy.name).toBe(resolved.name);
  });

  it('pay skill through the SDK client: payment-required task → payment-submitted → the payee is paid once; GetTask reads it back completed, also from a new app instance', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '100.00' } });
    const client = await clientFor(base, agent.key);

    const first = (await client.sendMessage(userMessage({ to: payee.handle, amount: '3.5' }))) as Task;
    expect(stateOf(first)).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(statusMeta(first)['x402.payment.status']).toBe('payment-required');
    expect(statusMeta(first)['x402.payment.required']).toMatchObject({
      x402Version: 2,
      accepts: [{ scheme: 'exact', network: 'eip155:31337', amount: '3500000', payTo: payee.address, extra: { name: expect.any(String), version: expect.any(String) } }],
    });
    expect(await paymentRows(t, agent.agentId)).toHaveLength(0);

    const submit = userMessage({}, { taskId: first.id, contextId: first.contextId, metadata: { 'x402.payment.status': 'payment-submitted' } });
    const paid = (await client.sendMessage(submit)) as Task;
    expect(paid.id).toBe(first.id);
    expect(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']).toContain(stateOf(paid));
    // The task is the payment's identity (DESIGN §14): no invented Idempotency-Key is stored.
    const rows: Array<{ id: string; mode: string; task_id: string; idempotency_key: string | null }> = await t.dataSource.query(
      `SELECT id, mode, task_id, idempotency_key FROM payments WHERE agent_id = $1`,
      [agent.agentId],
    );
    expect(rows).toEqual([{ id: expect.any(String), mode: 'a2a', task_id: first.id, idempotency_key: null }]);

    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect(await chain.usdcBalance(payee.address)).toBe(3_500_000n);
    const done = await client.getTask({ tenant: '', id: first.id, historyLength: undefined });
    expect(stateOf(done)).toBe('TASK_STATE_COMPLETED');
    expect(statusMeta(done)).toMatchObject({ 'x402.payment.status': 'payment-completed', 'x402.payment.receipts': [{ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) }] });

    // A second submit on the completed task is refused by the SDK (terminal task); no second payment.
    await expect(client.sendMessage(userMessage({}, { taskId: first.id, contextId: first.contextId, metadata: { 'x402.payment.status': 'payment-submitted' } }))).rejects.toThrow(/terminal state/);
    expect(await paymentRows(t, agent.agentId)).toHaveLength(1);

    // Another app instance (fresh process state, Redis copy removed): GetTask reads Postgres.
    const t2 = await createTestApp({ API_BASE_URL: base });
    try {
      const keys = await scanKeys(t2, `${process.env.REDIS_PREFIX}:a2a:task:*`);
      if (keys.length) await redisOf(t2).del(...keys);
      const res = await t2.http.post('/api/v1/a2a').set('X-Api-Key', agent.key).set('A2A-Version', '1.0').send({ jsonrpc: '2.0', id: 7, method: 'GetTask', params: { id: first.id } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 7, result: { id: first.id, status: { state: 'TASK_STATE_COMPLETED' } } });
    } finally {
      await t2.close();
    }
  });

  it('0.3 method names on the same endpoint: message/send and tasks/get (no A2A-Version header)', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 10n * USDC });
    const sent = await t.http
      .post('/api/v1/a2a')
      .set('X-Api-Key', agent.key)
      .send({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { to: payee.handle, amount: '1.00' } }] } } });
    expect(sent.status).toBe(200);
    expect(sent.body.result).toMatchObject({ kind: 'task', status: { state: 'input-required' } });
    const got = await t.http.post('/api/v1/a2a').set('X-Api-Key', agent.key).send({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: sent.body.result.id } });
    expect(got.status).toBe(200);
    expect(got.body.result).toMatchObject({ kind: 'task', id: sent.body.result.id, status: { state: 'input-required' } });
    const listed = await t.http.post('/api/v1/a2a').set('X-Api-Key', agent.key).set('A2A-Version', '1.0').send({ jsonrpc: '2.0', id: 4, method: 'ListTasks', params: { status: 'TASK_STATE_INPUT_REQUIRED' } });
    expect(listed.body.result).toMatchObject({ tasks: [{ id: sent.body.result.id }], totalSize: 1 });
    const none = await t.http.post('/api/v1/a2a').set('X-Api-Key', agent.key).set('A2A-Version', '1.0').send({ jsonrpc: '2.0', id: 5, method: 'ListTasks', params: { status: 'TASK_STATE_COMPLETED' } });
    expect(none.body.result.tasks ?? []).toEqual([]);
    const row: Array<{ state: string }> = await t.dataSource.query(`SELECT state FROM a2a_tasks WHERE id = $1`, [sent.body.result.id]);
    expect(row).toEqual([{ state: 'TASK_STATE_INPUT_REQUIRED' }]);
    // Tasks are per credential: another agent cannot read it.
    const other = await createAgent(t, chain);
    const foreign = await t.http.post('/api/v1/a2a').set('X-Api-Key', other.key).send({ jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { id: sent.body.result.id } });
    expect(foreign.body.error).toMatchObject({ code: -32001 });
  });

  it('the pay skill declares its input: it runs the declaration of POST /a2a/payment-submitted, DTO included (issue 31)', () => {
    const pay = t.app.get(A2aOperations).pay;
    expect(pay.declaration).toBe(SUBMIT_A2A_PAYMENT);
    expect(pay.input).toBe(PaymentSubmittedParamsDto);
  });

  it('the pay skill reads amount and payee as POST /payments does (one function): the same refusal body for a payee without a payout address and an unknown one', async () => {
    const agent: TestAgent = await createAgent(t, chain, { float: 0n, policy: { perTransactionMax: '1.00', dailyLimit: '100.00' } });
    const client = await clientFor(base, agent.key);
    const org = await createOrg(t.app);
    const [row] = await t.dataSource.query<Array<{ handle: string }>>('SELECT handle FROM organizations WHERE id = $1', [org.organizationId]);
    for (const to of [row.handle, `no-such-${randomUUID().slice(0, 8)}`]) {
      const rest = await t.http.post('/api/v1/payments').set('X-Api-Key', agent.key).set('Idempotency-Key', `terms-${randomUUID()}`).send({ to, amount: '0.50' });
      expect(rest.status).toBe(400);
      const task = (await client.sendMessage(userMessage({ to, amount: '0.50' }))) as Task;
      expect(stateOf(task)).toBe('TASK_STATE_FAILED');
      expect(statusMeta(task).error).toEqual({ error: rest.body.error, code: rest.body.code, details: rest.body.details });
    }
  });

  it('one reading of amount and payee (issue 31): a bad amount or an unknown payee gets the same body on POST /payments, MCP svc_pay, the A2A pay skill and A2A payment-submitted', async () => {
    const agent: TestAgent = await createAgent(t, chain, { float: 0n, policy: { dailyLimit: '100.00' } });
    const client = await clientFor(base, agent.key);
    const tools = await mcp.asKey(agent.key);
    const payee = await createPayee(t, chain);
    const errorOf = (b: Record<string, unknown>) => ({ error: b.error, code: b.code, details: b.details });
    const cases = [
      { to: payee.handle, amount: '1.0000001' },
      { to: payee.handle, amount: '-1' },
      { to: payee.handle, amount: 'abc' },
      { to: `no-such-${randomUUID().slice(0, 8)}`, amount: '0.50' },
    ];
    for (const terms of cases) {
      const rest = await t.http.post('/api/v1/payments').set('X-Api-Key', agent.key).set('Idempotency-Key', `terms-${randomUUID()}`).send(terms);
      expect([rest.status, rest.body.code]).toEqual([400, 'invalid_request']);
      expect((rest.body.details.fields as Array<{ param: string }>).map((f) => f.param)).toEqual([terms.amount === '0.50' ? 'to' : 'amount']);
      const [isError, viaTool] = await callTool(tools, 'svc_pay', { ...terms, idempotencyKey: `terms-${randomUUID()}` });
      expect(isError).toBe(true);
      expect(errorOf(viaTool)).toEqual(errorOf(rest.body));
      const task = (await client.sendMessage(userMessage(terms))) as Task;
      expect(stateOf(task)).toBe('TASK_STATE_FAILED');
      expect(statusMeta(task).error).toEqual(errorOf(rest.body));
      const submitted = await t.http
        .post('/api/v1/a2a/payment-submitted')
        .set('X-Api-Key', agent.key)
        .set('Idempotency-Key', `terms-${randomUUID()}`)
        .send({ jsonrpc: '2.0', id: 1, params: { ...terms, taskId: `t-${randomUUID()}` } });
      expect(submitted.status).toBe(400);
      expect(errorOf(submitted.body.error.data)).toEqual(errorOf(rest.body));
    }
    expect(await paymentRows(t, agent.agentId)).toHaveLength(0);
  });

  it('the pay skill validates its input as the kernel validates it on REST (issue 31): a wrong type gets the same field messages', async () => {
    const agent: TestAgent = await createAgent(t, chain, { float: 0n });
    const client = await clientFor(base, agent.key);
    for (const data of [{ to: 'acme', amount: 5 }, { to: '', amount: '1.00' }, { amount: '1.00' }]) {
      const rest = await t.http.post('/api/v1/payments').set('X-Api-Key', agent.key).set('Idempotency-Key', `types-${randomUUID()}`).send(data);
      expect([rest.status, rest.body.code]).toEqual([400, 'invalid_request']);
      const task = (await client.sendMessage(userMessage({ skill: 'pay', ...data }))) as Task;
      expect(stateOf(task)).toBe('TASK_STATE_FAILED');
      expect(statusMeta(task).error).toEqual({ error: rest.body.error, code: rest.body.code, details: rest.body.details });
    }
  });

  it('a refused payment ends the task failed with our error body; a payment in flight cannot be canceled', async () => {
    const payee = await createPayee(t, chain);
    const agent: TestAgent = await createAgent(t, chain, { float: 10n * USDC, policy: { perTransactionMax: '1.00', dailyLimit: '100.00' } });
    const client = await clientFor(base, agent.key);
    const refused = (await client.sendMessage(userMessage({ to: payee.handle, amount: '2.00' }, { metadata: { 'x402.payment.status': 'payment-submitted' } }))) as Task;
    expect(stateOf(refused)).toBe('TASK_STATE_FAILED');
    expect(statusMeta(refused)).toMatchObject({ 'x402.payment.status': 'payment-failed', 'x402.payment.error': 'policy_denied', error: { code: 'policy_denied', details: { rule: 'per_transaction_limit' } } });
    expect(await paymentRows(t, agent.agentId)).toHaveLength(0);
    // payment-submitted on that failed task: 409 (the task ended without a payment).
    const late = await t.http
      .post('/api/v1/a2a/payment-submitted')
      .set('X-Api-Key', agent.key)
      .set('Idempotency-Key', `late-${refused.id}`)
      .send({ jsonrpc: '2.0', id: 1, params: { to: payee.handle, amount: '0.10', taskId: refused.id } });
    expect(late.status).toBe(409);
    expect(late.body.error.data).toMatchObject({ code: 'invalid_request', details: { status: 'TASK_STATE_FAILED' } });

    const ok = (await client.sendMessage(userMessage({ to: payee.handle, amount: '0.50' }, { metadata: { 'x402.payment.status': 'payment-submitted' } }))) as Task;
    expect(stateOf(ok)).toBe('TASK_STATE_WORKING');
    await expect(client.cancelTask({ tenant: '', id: ok.id, metadata: undefined })).rejects.toThrow(/payment in flight and cannot be canceled/);
    const waiting = (await client.sendMessage(userMessage({ to: payee.handle, amount: '0.25' }))) as Task;
    const canceled = await client.cancelTask({ tenant: '', id: waiting.id, metadata: undefined });
    expect(stateOf(canceled)).toBe('TASK_STATE_CANCELED');
    const declined = (await client.sendMessage(userMessage({ to: payee.handle, amount: '0.30' }))) as Task;
    const rejected = (await client.sendMessage(userMessage({}, { taskId: declined.id, contextId: declined.contextId, metadata: { 'x402.payment.status': 'payment-rejected' } }))) as Task;
    expect(stateOf(rejected)).toBe('TASK_STATE_CANCELED');
    expect(statusMeta(rejected)['x402.payment.status']).toBe('payment-rejected');
    const nudged = (await client.sendMessage(userMessage({ to: payee.handle, amount: '0.40' }))) as Task;
    const still = (await client.sendMessage(SendMessageRequest.fromJSON({ message: { messageId: randomUUID(), role: 'ROLE_USER', taskId: nudged.id, contextId: nudged.contextId, parts: [{ text: 'ok?' }] } }))) as Task;
    expect(stateOf(still)).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(statusMeta(still)['x402.payment.status']).toBe('payment-required');
    expect((await paymentRows(t, agent.agentId)).map((p) => p.amount)).toEqual(['500000']);
  });

  it('payment-submitted pays a task the JSON-RPC endpoint asked payment for (other terms → 422); the SDK then sees it paid', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 10n * USDC });
    const client = await clientFor(base, agent.key);
    const asked = (await client.sendMessage(userMessage({ to: payee.handle, amount: '2.00' }))) as Task;
    expect(stateOf(asked)).toBe('TASK_STATE_INPUT_REQUIRED');
    const post = (amount: string, key: string) =>
      t.http.post('/api/v1/a2a/payment-submitted').set('X-Api-Key', agent.key).set('Idempotency-Key', key).send({ jsonrpc: '2.0', id: 1, params: { to: payee.handle, amount, taskId: asked.id } });
    const wrong = await post('3.00', `w-${asked.id}`);
    expect(wrong.status).toBe(422);
    expect(wrong.body.error.data).toMatchObject({ code: 'idempotency_conflict', details: { reason: 'task_mismatch' } });
    const paid = await post('2.00', `p-${asked.id}`);
    expect(paid.status).toBe(200);
    expect(paid.body.result.task).toMatchObject({ id: asked.id, contextId: asked.contextId, status: { state: 'TASK_STATE_WORKING' } });
    // The SDK path on the same task: the same payment, not a second one.
    const again = (await client.sendMessage(userMessage({}, { taskId: asked.id, contextId: asked.contextId, metadata: { 'x402.payment.status': 'payment-submitted' } }))) as Task;
    expect((Task.toJSON(again) as { metadata: { paymentId: string } }).metadata.paymentId).toBe(paid.body.result.payment.id);
    expect(await paymentRows(t, agent.agentId)).toHaveLength(1);
  });

  it('create-checkout: a merchant key gets a completed task with the session; an agent key gets a failed task (missing_scope, as REST)', async () => {
    const org = await createOrg(t.app);
    const merchant = await clientFor(base, org.key);
    const made = (await merchant.sendMessage(userMessage({ skill: 'create-checkout', amount: '25.00', description: 'Logo design' }))) as Task;
    expect(stateOf(made)).toBe('TASK_STATE_COMPLETED');
    const session = (Task.toJSON(made) as { artifacts: Array<{ parts: Array<{ data: { id: string; amount: string; status: string } }> }> }).artifacts[0].parts[0].data;
    expect(session).toMatchObject({ amount: '25.00', status: 'open' });
    const fetched = await t.http.get(`/api/v1/checkout-sessions/${session.id}`).set('X-Api-Key', org.key);
    expect(fetched.status).toBe(200);

    const invalid = (await merchant.sendMessage(userMessage({ skill: 'create-checkout', amount: '-1', description: 'x' }))) as Task;
    expect(stateOf(invalid)).toBe('TASK_STATE_FAILED');
    expect(statusMeta(invalid)).toMatchObject({ error: { code: 'invalid_request' } });

    const agent = await createAgent(t, chain);
    const asAgent = await clientFor(base, agent.key);
    const refused = (await asAgent.sendMessage(userMessage({ skill: 'create-checkout', amount: '25.00', description: 'Logo design' }))) as Task;
    expect(stateOf(refused)).toBe('TASK_STATE_FAILED');
    // The kernel's one access check (scope before credential kind), as POST /checkout-sessions answers an agent key.
    expect(statusMeta(refused)).toMatchObject({ error: { code: 'missing_scope', details: { required: ['checkout:write'] } } });
    const viaRest = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', agent.key).send({ amount: '25.00', description: 'Logo design' });
    expect(viaRest.body).toMatchObject({ code: 'missing_scope', details: { required: ['checkout:write'] } });

    const text = await asAgent.sendMessage(SendMessageRequest.fromJSON({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] } }));
    expect(Message.toJSON(text as Message)).toMatchObject({ role: 'ROLE_AGENT' });
    expect(TaskState.TASK_STATE_COMPLETED).toBe(3);
  });

  it('without a credential: 401 with a JSON-RPC error whose data is our error body', async () => {
    const res = await t.http.post('/api/v1/a2a').send({ jsonrpc: '2.0', id: 5, method: 'SendMessage', params: {} });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 5, error: { code: -32000, data: { code: 'unauthorized', requestId: expect.any(String) } } });
  });
});

function redisOf(t: TestApp): Redis {
  return t.app.get<Redis>(REDIS);
}

function scanKeys(t: TestApp, pattern: string): Promise<string[]> {
  return redisOf(t).keys(pattern);
}
