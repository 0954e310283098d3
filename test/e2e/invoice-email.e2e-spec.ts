import { AddressInfo } from 'node:net';
import { simpleParser, ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { createTestApp, TestApp } from '../support/app';
import { createOrg, TestOrg } from '../support/factories';
import { waitFor } from '../support/wait';
import { IsolatedEnv, isolatedWebhookEnv, startTestWorker, TestWorker } from '../support/webhook-env';

jest.setTimeout(60_000);

/**
 * Invoice email through a real SMTP server started here (smtp-server), delivered by the real
 * worker after the send committed (docs/architecture.md §11): the customer gets a plain and an
 * HTML part with the amount, due date and pay link; a refused recipient is retried, not lost.
 */
describe('invoice email (real SMTP, real worker)', () => {
  let iso: IsolatedEnv;
  let smtp: SMTPServer;
  let t: TestApp;
  let worker: TestWorker;
  let org: TestOrg;
  const inbox: Array<{ envelopeTo: string[]; mail: ParsedMail }> = [];

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('mail');
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onRcptTo(address, _session, cb) {
        if (address.address.startsWith('bounce@')) return cb(Object.assign(new Error('550 mailbox unavailable'), { responseCode: 550 }));
        cb();
      },
      onData(stream, session, cb) {
        simpleParser(stream)
          .then((mail) => {
            inbox.push({ envelopeTo: session.envelope.rcptTo.map((r) => r.address), mail });
            cb();
          })
          .catch(cb);
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const port = (smtp.server.address() as AddressInfo).port;
    const env = { ...iso.env, SMTP_URL: `smtp://127.0.0.1:${port}`, SMTP_FROM: 'Acme Billing <billing@acme.test>' };
    t = await createTestApp(env);
    worker = await startTestWorker(env);
    org = await createOrg(t.app);
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
    await iso?.drop();
  });

  const invoiceBody = (email: string) => ({
    customer: { name: 'Ada Lovelace', email },
    lineItems: [
      { description: 'Logo design', quantity: 2, unitAmount: '250.00' },
      { description: 'Rush fee', unitAmount: '49.990001' },
    ],
    dueAt: '2030-03-15T12:00:00.000Z',
    memo: 'Thank you!',
  });

  it('send commits, then the worker delivers the mail: right recipient, amount, due date and link, plain and HTML', async () => {
    const created = await t.http.post('/api/v1/invoices').set('X-Api-Key', org.key).send(invoiceBody('ada@example.com'));
    const sent = await t.http.post(`/api/v1/invoices/${created.body.id}/send`).set('X-Api-Key', org.key).send({});
    expect(sent.status).toBe(200);
    expect(sent.body.email).toMatchObject({ status: 'pending', to: 'ada@example.com', reason: null });
    const payUrl = `https://pay.test/invoices/${created.body.id}`;
    expect(sent.body.payUrl).toBe(payUrl);

    const got = await waitFor(() => inbox.find((m) => m.envelopeTo.includes('ada@example.com')), { label: 'the invoice email', timeoutMs: 20_000, describe: () => t.dataSource.query('SELECT status, attempts, last_error, next_attempt_at FROM invoice_emails') });
    const { mail } = got;
    expect(mail.from?.value).toEqual([{ name: 'Acme Billing', address: 'billing@acme.test' }]);
    expect(got.envelopeTo).toEqual(['ada@example.com']);
    expect(mail.subject).toBe('Invoice INV-000001 from Test Org: 549.990001 USDC due 2030-03-15');
    expect(mail.text).toContain('549.990001 USDC');
    expect(mail.text).toContain('due on 2030-03-15');
    expect(mail.text).toContain(`Pay it here: ${payUrl}`);
    expect(mail.text).toContain('2 × Logo design @ 250.00 USDC = 500.00 USDC');
    expect(mail.html).toContain(`href="${payUrl}"`);
    expect(mail.html).toContain('549.990001 USDC');
    expect(mail.html).toContain('2030-03-15');

    const after = await waitFor(async () => {
      const r = await t.http.get(`/api/v1/invoices/${created.body.id}`).set('X-Api-Key', org.key);
      return r.body.email?.status === 'sent' ? r.body : null;
    }, { label: 'email recorded as sent' });
    expect(after.email).toMatchObject({ status: 'sent', attempts: 1, lastError: null });
    expect(Date.parse(after.email.sentAt)).toBeGreaterThan(0);
    expect(inbox.filter((m) => m.envelopeTo.includes('ada@example.com'))).toHaveLength(1);
  });

  it('a refused recipient stays pending with the error and a later retry; nothing is delivered', async () => {
    const created = await t.http.post('/api/v1/invoices').set('X-Api-Key', org.key).send(invoiceBody('bounce@example.com'));
    await t.http.post(`/api/v1/invoices/${created.body.id}/send`).set('X-Api-Key', org.key).send({});
    const row = await waitFor(async () => {
      const rows = await t.dataSource.query('SELECT status, attempts, last_error, next_attempt_at FROM invoice_emails WHERE invoice_id = $1', [created.body.id]);
      return rows[0]?.last_error ? rows[0] : null;
    }, { label: 'the refused attempt recorded' });
    expect(row.status).toBe('pending');
    expect(row.attempts).toBe(1);
    expect(row.last_error).toMatch(/550/);
    expect(new Date(row.next_attempt_at).getTime()).toBeGreaterThan(Date.now() + 20_000);
    expect(inbox.some((m) => m.envelopeTo.includes('bounce@example.com'))).toBe(false);
  });
});
