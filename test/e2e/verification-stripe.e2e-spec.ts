import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { createTestApp, TestApp } from '../support/app';
import { expectError } from '../support/errors';
import { createOrg, TestOrg } from '../support/factories';

jest.setTimeout(60_000);

const SECRET_KEY = 'sk_test_standin';
const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('hex')}`;

interface StandInSession {
  id: string;
  object: 'identity.verification_session';
  created: number;
  status: string;
  url: string | null;
  last_error: { code: string; reason: string } | null;
  client_reference_id: string | null;
  metadata: Record<string, string>;
  type: string;
  livemode: false;
}

/**
 * A local HTTP stand-in for the two Stripe Identity endpoints the adapter calls: create and
 * retrieve a VerificationSession. It records every request (method, path, form body, auth).
 */
class StripeStandIn {
  readonly sessions = new Map<string, StandInSession>();
  readonly requests: Array<{ method: string; path: string; form: URLSearchParams; authorization: string | undefined }> = [];
  private server!: Server;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    const path = (req.url ?? '').split('?')[0];
    this.requests.push({ method: req.method ?? '', path, form, authorization: req.headers.authorization });
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json', 'Request-Id': `req_${randomBytes(6).toString('hex')}` });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'POST' && path === '/v1/identity/verification_sessions') {
      const id = `vs_${randomBytes(12).toString('hex')}`;
      const session: StandInSession = {
        id,
        object: 'identity.verification_session',
        created: Math.floor(Date.now() / 1000),
        status: 'requires_input',
        url: `https://verify.stripe.com/start/test_${randomBytes(16).toString('hex')}`,
        last_error: null,
        client_reference_id: form.get('client_reference_id'),
        metadata: { organization_id: form.get('metadata[organization_id]') ?? '' },
        type: form.get('type') ?? '',
        livemode: false,
      };
      this.sessions.set(id, session);
      return json(200, session);
    }
    const m = /^\/v1\/identity\/verification_sessions\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && m && this.sessions.has(m[1])) return json(200, this.sessions.get(m[1]));
    return json(404, { error: { type: 'invalid_request_error', message: `No such route ${req.method} ${path}` } });
  }
}

/**
 * The Stripe Identity adapter against a local stand-in of the Stripe API (docs/architecture.md §12):
 * the session is created with the right parameters, callbacks signed with the SDK's own test
 * header helper are verified and mapped (verified, requires_input, canceled), the status applied
 * is the one retrieved from Stripe, and a bad signature changes nothing.
 */
describe('verification with Stripe Identity (stand-in)', () => {
  let t: TestApp;
  const standIn = new StripeStandIn();

  beforeAll(async () => {
    await standIn.start();
    t = await createTestApp({
      IDENTITY_PROVIDER: 'stripe',
      STRIPE_SECRET_KEY: SECRET_KEY,
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_API_BASE: `http://127.0.0.1:${standIn.port}`,
    });
  });
  afterAll(async () => {
    await t?.close();
    await standIn.stop();
  });

  const identity = async (org: TestOrg) => (await t.http.get('/api/v1/verification').set('X-Api-Key', org.key)).body.identity;
  async function started(): Promise<{ org: TestOrg; session: StandInSession; url: string }> {
    const org = await createOrg(t.app);
    const res = await t.http.post('/api/v1/verification/start').set('X-Api-Key', org.key).send({});
    expect(res.status).toBe(200);
    const session = [...standIn.sessions.values()].find((s) => s.client_reference_id === org.organizationId)!;
    return { org, session, url: res.body.verificationUrl };
  }
  function callback(type: string, object: unknown, secret = WEBHOOK_SECRET) {
    const payload = JSON.stringify({ id: `evt_${randomBytes(8).toString('hex')}`, object: 'event', type, created: Math.floor(Date.now() / 1000), data: { object }, livemode: false, api_version: '2025-01-01' });
    const header = Stripe.webhooks.generateTestHeaderString({ payload, secret });
    return t.http.post('/api/v1/verification/providers/stripe/webhook').set('Content-Type', 'application/json').set('Stripe-Signature', header).send(payload);
  }

  it('start creates a document VerificationSession for the organisation and answers its url (not stored)', async () => {
    const { org, session, url } = await started();
    const create = standIn.requests.find((r) => r.method === 'POST' && r.form.get('client_reference_id') === org.organizationId)!;
    expect(create.path).toBe('/v1/identity/verification_sessions');
    expect(create.authorization).toBe(`Bearer ${SECRET_KEY}`);
    expect(Object.fromEntries(create.form)).toEqual({ type: 'document', client_reference_id: org.organizationId, 'metadata[organization_id]': org.organizationId });
    expect(url).toBe(session.url);
    expect(await identity(org)).toMatchObject({ provider: 'stripe', status: 'pending', reference: session.id, verificationUrl: null });
  });

  it.each([
    ['verified', null, 'verified', null],
    ['requires_input', { code: 'document_unverified_other', reason: 'The document was invalid' }, 'pending', 'document_unverified_other: The document was invalid'],
    ['canceled', null, 'unverified', null],
  ])('identity.verification_session.%s is mapped (%#)', async (stripeStatus, lastError, status, mappedError) => {
    const { org, session } = await started();
    session.status = stripeStatus;
    session.last_error = lastError;
    const res = await callback(`identity.verification_session.${stripeStatus}`, session);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, applied: true });
    expect(await identity(org)).toMatchObject({ status, lastError: mappedError, reference: session.id });
    expect(standIn.requests.some((r) => r.method === 'GET' && r.path === `/v1/identity/verification_sessions/${session.id}`)).toBe(true);
  });

  it('the status applied is the one Stripe holds now: a late `processing` event after `verified` cannot undo it', async () => {
    const { org, session } = await started();
    session.status = 'verified';
    expect((await callback('identity.verification_session.processing', { ...session, status: 'processing' })).body.applied).toBe(true);
    expect((await identity(org)).status).toBe('verified');
    expect((await callback('identity.verification_session.requires_input', { ...session, status: 'requires_input' })).body.applied).toBe(false);
    expect((await identity(org)).status).toBe('verified');
  });

  it('a callback with a bad signature → 400 bad_signature, no change and no call to Stripe', async () => {
    const { org, session } = await started();
    session.status = 'verified';
    const before = standIn.requests.length;
    const res = await callback('identity.verification_session.verified', session, `whsec_${randomBytes(24).toString('hex')}`);
    expect(expectError(res, 400, 'invalid_request')).toMatchObject({ reason: 'bad_signature' });
    const unsigned = await t.http.post('/api/v1/verification/providers/stripe/webhook').set('Content-Type', 'application/json').send(JSON.stringify({ type: 'identity.verification_session.verified', data: { object: session } }));
    expect(expectError(unsigned, 400, 'invalid_request')).toMatchObject({ reason: 'bad_signature' });
    expect(standIn.requests.length).toBe(before);
    expect((await identity(org)).status).toBe('pending');
  });

  it('other events are acknowledged and ignored; the sandbox callback and page do not exist with Stripe configured', async () => {
    expect((await callback('charge.succeeded', { id: 'ch_1', object: 'charge' })).body).toEqual({ received: true, applied: false });
    expect((await t.http.post('/api/v1/verification/providers/sandbox/webhook').send({})).status).toBe(404);
    expect((await t.http.get('/verify/vsb_abcdefghijklmnopqrstuvwx')).status).toBe(404);
  });
});
