import { AgentRefusalError, InvalidRequestError, NotFoundError, Pcp, WebhookSignatureError } from '@pcp/sdk';
import { createServer as createTcpServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { EscrowService } from '../../src/modules/escrow/escrow.service';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createPayee } from '../support/agents';
import { createParties, TestChain, USDC } from '../support/chain';
import { createOAuthClient, createOrg } from '../support/factories';
import { waitFor } from '../support/wait';
import { IsolatedEnv, isolatedWebhookEnv, startTestWorker, TestWorker } from '../support/webhook-env';
import { WebhookReceiver } from '../support/webhook-receiver';

// Funding, escrow actions and payments wait on anvil and the worker.
jest.setTimeout(120_000);

/**
 * A TCP proxy in front of the api. While `dropResponses > 0`, the next request is forwarded to the
 * api (which runs it to the end) and its response is thrown away by closing the client's
 * connection: a real lost response, as after a network cut. Records each request's Idempotency-Key.
 */
async function lossyProxy(apiPort: number) {
  const state = { dropResponses: 0, keys: [] as string[] };
  const sockets = new Set<Socket>();
  const server: Server = createTcpServer((client) => {
    const upstream = connect(apiPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    let drop = false;
    client.on('data', (chunk: Buffer) => {
      const key = /\r\nidempotency-key: *([^\r\n]+)/i.exec(chunk.toString('latin1'))?.[1];
      if (/^POST /.test(chunk.toString('latin1'))) {
        if (key) state.keys.push(key);
        if (state.dropResponses > 0) {
          state.dropResponses--;
          drop = true;
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => (drop ? (client.destroy(), upstream.destroy()) : client.write(chunk)));
    for (const s of [client, upstream]) s.on('error', () => undefined).on('close', () => (client.destroy(), upstream.destroy()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    state,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The SDK (packages/sdk) against the running api and worker (real Postgres, Redis, BullMQ, anvil):
 * checkout, webhooks, escrow and agent payments called only through `Pcp`, webhook deliveries
 * verified with `pcp.webhooks.verify` (DESIGN §20).
 */
describe('@pcp/sdk against the running api', () => {
  let iso: IsolatedEnv;
  let t: TestApp;
  let worker: TestWorker;
  let chain: TestChain;
  let receiver: WebhookReceiver;
  let baseUrl: string;

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('sdk');
    const env = { ...iso.env, CHAIN_POLL_MS: '200' };
    t = await createTestApp(env);
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    worker = await startTestWorker(env);
    chain = new TestChain();
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    await receiver?.close();
    chain?.close();
    await iso?.drop();
  });

  describe('checkout', () => {
    it('creates, gets and lists checkout sessions (the iterator pages with starting_after), with typed errors', async () => {
      const org = await createOrg(t.app);
      const pcp = new Pcp({ baseUrl, credentials: { apiKey: org.key } });
      const created = [];
      for (const amount of ['1.5', '2.00', '3.000001']) created.push(await pcp.POST('/api/v1/checkout-sessions', { body: { amount, description: `order ${amount}` } }));
      expect(created.map((c) => c.amount)).toEqual(['1.50', '2.00', '3.000001']);
      expect(created[0]).toMatchObject({ status: 'open', settlement: 'escrow', payUrl: expect.stringContaining(`/checkout/${created[0].id}`) });

      const got = await pcp.GET('/api/v1/checkout-sessions/{id}', { params: { path: { id: created[1].id } } });
      expect(got).toMatchObject({ id: created[1].id, amount: '2.00', description: 'order 2.00' });

      const listed: string[] = [];
      for await (const s of pcp.list('/api/v1/checkout-sessions', { params: { query: { limit: 2 } } })) listed.push(s.id);
      expect(listed).toEqual(created.map((c) => c.id).reverse());

      const missing = await pcp.GET('/api/v1/checkout-sessions/{id}', { params: { path: { id: randomUUID() } } }).catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(NotFoundError);
      expect(missing).toMatchObject({ status: 404, code: 'not_found', requestId: expect.stringMatching(/^req_/) });
      const invalid = await pcp.POST('/api/v1/checkout-sessions', { body: { amount: '1e5', description: 'x' } }).catch((e: unknown) => e);
      expect(invalid).toBeInstanceOf(InvalidRequestError);
      expect(invalid).toMatchObject({ status: 400, code: 'invalid_request', details: { fields: [{ param: 'amount', message: expect.any(String) }] } });
    });

    it('the body idempotencyKey is the request key: the same create twice is one session', async () => {
      const org = await createOrg(t.app);
      const pcp = new Pcp({ baseUrl, credentials: { apiKey: org.key } });
      const body = { amount: '4.00', description: 'once', idempotencyKey: `order-${randomUUID()}` };
      const [a, b] = [await pcp.POST('/api/v1/checkout-sessions', { body }), await pcp.POST('/api/v1/checkout-sessions', { body })];
      expect(b.id).toBe(a.id);
      let count = 0;
      for await (const _ of pcp.list('/api/v1/checkout-sessions')) count++;
      expect(count).toBe(1);
    });

    it('OAuth client credentials: the SDK exchanges them at /oauth/token and calls with the bat_ token', async () => {
      const org = await createOrg(t.app);
      const client = await createOAuthClient(t.app, org.organizationId, ['checkout:read', 'checkout:write']);
      const pcp = new Pcp({ baseUrl, credentials: { oauth: { clientId: client.clientId, clientSecret: client.clientSecret, scope: 'checkout:write' } } });
      const session = await pcp.POST('/api/v1/checkout-sessions', { body: { amount: '9.99', description: 'via oauth' } });
      expect((await pcp.GET('/api/v1/checkout-sessions/{id}', { params: { path: { id: session.id } } })).amount).toBe('9.99');
      expect((await pcp.GET('/api/v1/me')).scopes).toEqual(['checkout:write']);
    });
  });

  describe('webhooks and escrow', () => {
    it('puts the endpoint, funds a checkout on anvil, walks its escrow through accept, mark-delivered and release, and verifies each delivery', async () => {
      const { seller, buyer } = await createParties(t, chain);
      const merchant = new Pcp({ baseUrl, credentials: { apiKey: seller.org.key } });
      const payer = new Pcp({ baseUrl, credentials: { apiKey: buyer.org.key } });

      const endpoint = await merchant.PUT('/api/v1/webhook-endpoints', { body: { url: receiver.url(`/sdk-${seller.org.organizationId}`) } });
      const secret = endpoint.secret!;
      expect(secret).toMatch(/^whsec_/);
      expect((await merchant.GET('/api/v1/webhook-endpoints')).id).toBe(endpoint.id);

      const checkout = await merchant.POST('/api/v1/checkout-sessions', { body: { amount: '40.00', description: 'escrowed order' } });
      const funding = await merchant.GET('/api/v1/checkout-sessions/{id}/funding-terms', { params: { path: { id: checkout.id }, query: { buyer: buyer.wallet.address } } });
      await chain.fundWithAuthorization(buyer.wallet, EscrowService.toChainTerms(funding as Parameters<typeof EscrowService.toChainTerms>[0]), funding.termsSignature!);

      const deliveries = (type: string) =>
        receiver.received.filter((d) => d.path === `/sdk-${seller.org.organizationId}` && d.body?.type === type && d.body.data.object.id === checkout.id);
      const funded = await waitFor(() => deliveries('checkout.funded')[0], { label: 'checkout.funded delivered', timeoutMs: 60_000 });
      const event = merchant.webhooks.verify(funded.rawBody, funded.headers, secret);
      expect(event).toMatchObject({ id: funded.webhookId, type: 'checkout.funded', data: { object: { id: checkout.id, status: 'funded', amount: '40.00' } } });
      expect(() => merchant.webhooks.verify(funded.rawBody.replace('40.00', '41.00'), funded.headers, secret)).toThrow(WebhookSignatureError);

      const escrowId = event.data.object.escrowId!;
      const escrow = await merchant.GET('/api/v1/escrows/{id}', { params: { path: { id: escrowId } } });
      expect(escrow).toMatchObject({ status: 'funded', amount: '40.00' });
      const escrowKey = escrow.chain!.escrowKey;

      const accept = await chain.act(seller.wallet, 'accept', escrowKey);
      expect(await merchant.POST('/api/v1/escrows/{id}/accept', { params: { path: { id: escrowId } }, body: { txHash: accept } })).toMatchObject({ status: 'accepted' });
      const delivered = await chain.act(seller.wallet, 'markDelivered', escrowKey);
      expect(await merchant.POST('/api/v1/escrows/{id}/mark-delivered', { params: { path: { id: escrowId } }, body: { txHash: delivered } })).toMatchObject({ status: 'delivered' });

      // Release requires an Idempotency-Key (DESIGN §5): the SDK supplies one.
      const release = await chain.act(buyer.wallet, 'release', escrowKey);
      const released = await payer.POST('/api/v1/escrows/{id}/release', { params: { path: { id: escrowId } }, body: { confirm: true, txHash: release } });
      expect(released).toMatchObject({ status: 'released' });
      expect(await chain.usdcBalance(seller.wallet.address)).toBe(40n * USDC);

      const releasedDelivery = await waitFor(() => deliveries('checkout.released')[0], { label: 'checkout.released delivered', timeoutMs: 60_000 });
      expect(merchant.webhooks.verify(releasedDelivery.rawBody, releasedDelivery.headers, secret)).toMatchObject({ type: 'checkout.released', data: { object: { id: checkout.id, status: 'released' } } });

      const listed: string[] = [];
      for await (const d of merchant.list('/api/v1/webhook-deliveries')) listed.push(d.eventType);
      expect(listed).toEqual(expect.arrayContaining(['checkout.funded', 'checkout.accepted', 'checkout.released']));
    });
  });

  describe('agent payments', () => {
    it('pays once although the first response is lost: the SDK retries with its own key and the api replays the payment', async () => {
      const proxy = await lossyProxy(Number(new URL(baseUrl).port));
      try {
        const payee = await createPayee(t, chain);
        const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '100.00' } });
        const pcp = new Pcp({ baseUrl: proxy.url, credentials: { apiKey: agent.key }, retry: { baseDelayMs: 50 } });

        proxy.state.dropResponses = 1;
        const payment = await pcp.POST('/api/v1/payments', { body: { to: payee.handle, amount: '7.25' } });
        expect(payment).toMatchObject({ to: payee.handle, amount: '7.25', mode: 'instant' });
        expect(proxy.state.keys).toHaveLength(2);
        expect(proxy.state.keys[1]).toBe(proxy.state.keys[0]);

        const all = [];
        for await (const p of pcp.list('/api/v1/payments')) all.push(p);
        expect(all.map((p) => p.id)).toEqual([payment.id]);
        await waitFor(async () => (await pcp.GET('/api/v1/payments/{id}', { params: { path: { id: payment.id } } })).status === 'succeeded', { label: 'payment succeeded', timeoutMs: 60_000 });
        expect(await chain.usdcBalance(payee.address)).toBe(7_250_000n);
      } finally {
        await proxy.close();
      }
    });

    it('a payment over the policy is an AgentRefusalError policy_denied with the rule in details', async () => {
      const payee = await createPayee(t, chain);
      const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '10.00' } });
      const pcp = new Pcp({ baseUrl, credentials: { apiKey: agent.key } });
      const err = await pcp.POST('/api/v1/payments', { body: { to: payee.handle, amount: '10.01' } }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentRefusalError);
      expect(err).toMatchObject({ status: 403, code: 'policy_denied', requestId: expect.stringMatching(/^req_/), details: { rule: 'daily_limit', limit: '10.00' } });
      expect(await pcp.GET('/api/v1/balance')).toMatchObject({ address: agent.signerAddress, balance: '50.00', currency: 'USDC' });
    });
  });
});
