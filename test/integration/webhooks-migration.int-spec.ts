import { v7 as uuidv7 } from 'uuid';
import { WebhookDeliveryTargets1795300007000 } from '../../migrations/1795300007000-WebhookDeliveryTargets';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { createTestApp, TestApp } from '../support/app';
import { createOrg } from '../support/factories';
import { emitEvents, isolatedWebhookEnv, IsolatedEnv } from '../support/webhook-env';

jest.setTimeout(60_000);

/**
 * Migration WebhookDeliveryTargets1795300007000 on existing rows: down to the per-URL schema,
 * rows written as the old relay wrote them, up again.
 */
describe('migration: webhook delivery targets', () => {
  let iso: IsolatedEnv;
  let api: TestApp;

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('whmig');
    api = await createTestApp(iso.env);
  });
  afterAll(async () => {
    await api?.close();
    await iso?.drop();
  });

  it('backfills target from the event and the endpoint, turns held into failed and failing into disabled_by_merchant on the way down, and keys deliveries by (event, target)', async () => {
    const A = 'http://127.0.0.1:9/endpoint';
    const C = 'http://127.0.0.1:9/checkout';
    const withEndpoint = await createOrg(api.app);
    const without = await createOrg(api.app);
    await api.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', withEndpoint.key).send({ url: A }).expect(200);
    const [e1] = await emitEvents(api.app, withEndpoint.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: {}, extraTargetUrl: C }]);
    const [e2] = await emitEvents(api.app, withEndpoint.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: {}, extraTargetUrl: A }]);
    const [e3] = await emitEvents(api.app, without.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: {}, extraTargetUrl: C }]);
    const [e4] = await emitEvents(api.app, withEndpoint.organizationId, [{ type: WebhookEvent.CheckoutAccepted, object: {} }]);
    const ds = api.dataSource;
    const migration = new WebhookDeliveryTargets1795300007000();
    const held = uuidv7();
    await ds.query(`INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, target, url, status) VALUES ($1, $2, $3, 'checkout.accepted', 'endpoint', $4, 'held')`, [
      held,
      e4,
      withEndpoint.organizationId,
      A,
    ]);

    await ds.query(`UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'failing', failing_since = now() WHERE organization_id = $1`, [withEndpoint.organizationId]);
    const qr = ds.createQueryRunner();
    try {
      await migration.down(qr);
      expect((await ds.query(`SELECT enabled, disabled_reason FROM webhook_endpoints WHERE organization_id = $1`, [withEndpoint.organizationId]))[0]).toEqual({
        enabled: false,
        disabled_reason: 'disabled_by_merchant',
      });
      expect((await ds.query(`SELECT status, last_error FROM webhook_deliveries WHERE id = $1`, [held]))[0]).toEqual({ status: 'failed', last_error: 'held while the endpoint was disabled' });
      const old = [
        [e1, withEndpoint.organizationId, A, 'succeeded'],
        [e1, withEndpoint.organizationId, C, 'succeeded'],
        [e2, withEndpoint.organizationId, A, 'retrying'],
        [e3, without.organizationId, C, 'failed'],
      ];
      for (const [eventId, org, url, status] of old) {
        await ds.query(`INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, url, status) VALUES ($1, $2, $3, 'checkout.funded', $4, $5)`, [uuidv7(), eventId, org, url, status]);
      }
      await migration.up(qr);
    } finally {
      await qr.release();
    }

    const rows: Array<{ event_id: string; url: string; target: string }> = await ds.query(`SELECT event_id, url, target FROM webhook_deliveries ORDER BY event_id, target`);
    expect(rows.map((r) => [r.event_id, r.url, r.target])).toEqual(
      [
        [e1, A, 'endpoint'],
        [e1, C, 'checkout'],
        [e2, A, 'endpoint'],
        [e3, C, 'checkout'],
        [e4, A, 'endpoint'],
      ].sort((x, y) => (x[0] + x[2]).localeCompare(y[0] + y[2])),
    );
    await expect(
      ds.query(`INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, target, url, status) VALUES ($1, $2, $3, 'checkout.funded', 'endpoint', 'http://x/other', 'pending')`, [
        uuidv7(),
        e1,
        withEndpoint.organizationId,
      ]),
    ).rejects.toThrow(/webhook_deliveries_event_id_target_key/);
    await expect(
      ds.query(`INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, target, url, status) VALUES ($1, $2, $3, 'checkout.funded', 'elsewhere', $4, 'pending')`, [
        uuidv7(),
        e2,
        withEndpoint.organizationId,
        C,
      ]),
    ).rejects.toThrow(/webhook_deliveries_target_check/);
  });
});
