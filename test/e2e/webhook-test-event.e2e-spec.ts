import { randomUUID } from 'node:crypto';
import { createTestApp, TestApp } from '../support/app';
import { expectError } from '../support/errors';
import { createOrg, TestOrg } from '../support/factories';
import { waitFor } from '../support/wait';
import { IsolatedEnv, isolatedWebhookEnv, startTestWorker, TestWorker } from '../support/webhook-env';
import { WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(120_000);

const ENDPOINT = '/api/v1/webhook-endpoints';

/**
 * POST /api/v1/webhook-endpoints/test ("send test event", docs/decisions.md "Console") with the
 * real worker: a signed `ping` through the normal delivery path, shown in the deliveries log.
 */
describe('webhook test event (POST /api/v1/webhook-endpoints/test)', () => {
  let iso: IsolatedEnv;
  let t: TestApp;
  let worker: TestWorker;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('whtest');
    t = await createTestApp(iso.env);
    worker = await startTestWorker(iso.env);
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    await receiver?.close();
    await iso?.drop();
  });

  const sendTest = (org: TestOrg, key?: string) => {
    const req = t.http.post(`${ENDPOINT}/test`).set('X-Api-Key', org.key);
    if (key) req.set('Idempotency-Key', key);
    return req.send();
  };

  it('delivers a signed ping to the endpoint whatever its events filter, logs it, and replays by Idempotency-Key without sending again', async () => {
    const org = await createOrg(t.app);
    const created = await t.http.put(ENDPOINT).set('X-Api-Key', org.key).send({ url: receiver.url('/ping-hook'), events: ['checkout.funded'] });
    expect(created.status).toBe(200);
    receiver.secrets = [created.body.secret];

    const key = randomUUID();
    const res = await sendTest(org, key);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ eventType: 'ping', status: 'pending', url: receiver.url('/ping-hook') });

    await waitFor(async () => receiver.received.some((d) => d.path === '/ping-hook'), { timeoutMs: 30_000, label: 'ping received' });
    const got = receiver.received.filter((d) => d.path === '/ping-hook');
    expect(got).toHaveLength(1);
    expect(got[0].verifiedWith).toEqual([0]);
    expect(got[0].body).toMatchObject({ type: 'ping', data: { object: { object: 'ping', url: receiver.url('/ping-hook') } } });

    await waitFor(async () => {
      const log = await t.http.get('/api/v1/webhook-deliveries').set('X-Api-Key', org.key);
      return log.body.data.some((d: { id: string; status: string; eventType: string }) => d.id === res.body.id && d.status === 'succeeded' && d.eventType === 'ping');
    }, { timeoutMs: 30_000, label: 'ping delivery succeeded in the log' });

    const filtered = await t.http.get('/api/v1/webhook-deliveries?eventType=ping').set('X-Api-Key', org.key);
    expect(filtered.status).toBe(200);
    expect(filtered.body.data.map((d: { id: string }) => d.id)).toEqual([res.body.id]);

    const replay = await sendTest(org, key);
    expect(replay.status).toBe(200);
    expect(replay.body.id).toBe(res.body.id);
    const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE organization_id = $1`, [org.organizationId]);
    expect(n).toBe(1);
  });

  it('404 without an endpoint, 409 endpoint_disabled while it is disabled; nothing is written', async () => {
    const org = await createOrg(t.app);
    expectError(await sendTest(org), 404, 'not_found');
    await t.http.put(ENDPOINT).set('X-Api-Key', org.key).send({ url: receiver.url('/off'), enabled: false }).expect(200);
    const res = await sendTest(org);
    expectError(res, 409, 'invalid_request');
    expect(res.body.details).toMatchObject({ reason: 'endpoint_disabled' });
    const [{ n }] = await t.dataSource.query(`SELECT (SELECT count(*) FROM webhook_deliveries WHERE organization_id = $1) + (SELECT count(*) FROM outbox_events WHERE organization_id = $1) AS n`, [org.organizationId]);
    expect(Number(n)).toBe(0);
  });
});
