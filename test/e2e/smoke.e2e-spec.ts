import { createTestApp, TestApp } from '../support/app';
import { createOrg } from '../support/factories';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('creates and reads back a checkout session', async () => {
    const org = await createOrg(t.app);
    const created = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).send({ amount: '10', description: 'x' });
    expect(created.status).toBe(200);
    const got = await t.http.get(`/api/v1/checkout-sessions/${created.body.id}`).set('X-Api-Key', org.key);
    expect(got.body).toEqual(created.body);
  });
});
