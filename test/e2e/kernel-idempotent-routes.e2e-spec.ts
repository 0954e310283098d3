import { IDEMPOTENT, type IdempotentOptions } from '../../src/kernel/idempotency/idempotent-work';
import { sha256Hex } from '../../src/kernel/idempotency/fingerprint';
import { routeOperation } from '../../src/kernel/http';
import { InvoicesController } from '../../src/modules/invoices/invoices.controller';
import { MandatesController } from '../../src/modules/mandates/mandates.controller';
import { WebhookEndpointsController } from '../../src/modules/webhooks/webhooks.controller';
import { ConsoleAdminController } from '../../src/transports/pages/console/console-admin.controller';
import { expectError } from '../support/errors';
import { useOrgApp } from '../support/app';
import { routesOf } from '../support/routes';

jest.setTimeout(60_000);

/**
 * Issue 31, "Route-scoped idempotency keys go": the five routes that carried `@Idempotent` on their
 * own (invoice PATCH and void, the webhook test event, mandate creation, console agent creation) run
 * declared operations (`@Runs`), and every key is scoped to its operation, never to method + path.
 */
describe('keyed routes run declared operations (no route-scoped keys)', () => {
  const ctx = useOrgApp();

  it.each([
    ...routesOf(InvoicesController, { update: 'update-invoice', void: 'void-invoice' }),
    ...routesOf(WebhookEndpointsController, { sendTest: 'send-test-webhook' }),
    ...routesOf(MandatesController, { create: 'create-mandate' }),
    ...routesOf(ConsoleAdminController, { createAgent: 'create-agent' }),
  ])('the former @Idempotent route of %s states that operation, and the interceptor is told it', (name, handler) => {
    expect(routeOperation(handler)?.name).toBe(name);
    expect((Reflect.getMetadata(IDEMPOTENT, handler) as IdempotentOptions).operation).toBe(name);
  });

  it('PATCH /invoices/{id}: the same key replays byte for byte, another body under it is 422, and the record is scoped to update-invoice', async () => {
    const { t, org } = ctx;
    const created = await t.http.post('/api/v1/invoices').set('X-Api-Key', org.key).send({ customer: { name: 'Ada Lovelace', email: 'ada@example.com' }, lineItems: [{ description: 'A', unitAmount: '1.00' }] }).expect(200);
    const key = `patch-${created.body.id}`;
    const patch = (body: object) => t.http.patch(`/api/v1/invoices/${created.body.id}`).set('X-Api-Key', org.key).set('Idempotency-Key', key).send(body);
    const first = await patch({ memo: 'first' });
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBe('false');
    // Between the two, the invoice changes: a replay answers the first outcome, not the current state.
    await t.http.patch(`/api/v1/invoices/${created.body.id}`).set('X-Api-Key', org.key).send({ memo: 'changed since' }).expect(200);
    const again = await patch({ memo: 'first' });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expectError(await patch({ memo: 'another' }), 422, 'idempotency_conflict');
    const [record] = await t.dataSource.query<Array<{ scope_hash: string }>>('SELECT scope_hash FROM idempotency_records WHERE organization_id = $1 AND idempotency_key = $2', [org.organizationId, key]);
    expect(record.scope_hash).toBe(sha256Hex([org.organizationId, 'merchant', 'op', 'update-invoice'].join('|')));
  });
});
