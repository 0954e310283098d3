/** The webhook endpoint (create, save, rotate, test) and its delivery log with retries. */
import { say } from '../../../pay/client/ui';
import { call, PcpError } from '../api';
import { attempt, content, formValues, h, type Row, showSecret, table, text } from '../dom';

type List = { data: Row[]; hasMore: boolean };

export async function webhooksPage(): Promise<void> {
  const endpoint = await call<Row>('GET', '/api/v1/webhook-endpoints').catch((err: unknown) => {
    if (err instanceof PcpError && err.status === 404) return null;
    throw err;
  });
  const deliveries = await call<List>('GET', '/api/v1/webhook-deliveries?limit=50');
  const form = h(
    'form',
    { id: 'endpoint', class: 'panel' },
    h('h2', {}, 'Endpoint'),
    h('label', {}, 'URL ', h('input', { name: 'url', type: 'url', required: true, value: endpoint ? text(endpoint.url) : '', size: '50' })),
    h('label', {}, h('input', { type: 'checkbox', name: 'enabled', value: 'true', ...(endpoint?.enabled === false ? {} : { checked: true }) }), ' enabled'),
    h('button', { class: 'primary', type: 'submit' }, endpoint ? 'Save' : 'Create endpoint'),
    endpoint ? h('button', { id: 'rotate', type: 'button', click: () => void attempt(async () => {
      const res = await call<Row>('PUT', '/api/v1/webhook-endpoints', { url: endpoint.url, rotateSecret: true });
      showSecret('New signing secret', text(res.secret));
    }) }, 'Rotate secret') : null,
    endpoint ? h('button', { id: 'send-test', type: 'button', click: () => void attempt(async () => {
      // A `ping` through the normal delivery path (docs/decisions.md "Console"); it shows in the log below.
      const res = await call<Row>('POST', '/api/v1/webhook-endpoints/test', undefined, { 'idempotency-key': crypto.randomUUID() });
      await webhooksPage();
      say(`Test event queued (delivery ${text(res.id)}). Reload to follow it.`, 'ok');
    }) }, 'Send test event') : null,
  ) as HTMLFormElement;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(async () => {
      const v = formValues(form);
      const res = await call<Row>('PUT', '/api/v1/webhook-endpoints', { url: v.url, enabled: v.enabled === 'true' });
      await webhooksPage();
      if (res.secret) showSecret('Signing secret', text(res.secret));
      say('Endpoint saved.', 'ok');
    });
  });
  content().replaceChildren(
    form,
    h('h2', {}, 'Deliveries'),
    table(deliveries.data, [
      ['Event', (r) => h('span', { class: 'delivery-event' }, text(r.eventType))],
      ['Status', (r) => h('span', { class: 'delivery-status' }, text(r.status))],
      ['Attempts', (r) => text(r.attempts)],
      ['Response', (r) => h('details', {}, h('summary', {}, text(r.responseStatus)), h('pre', {}, text(r.responseBody ?? r.lastError)))],
      ['', (r) => (r.status === 'succeeded' ? '' : h('button', { class: 'retry', type: 'button', click: () => void attempt(async () => {
        const res = await call<Row>('POST', `/api/v1/webhook-deliveries/${text(r.id)}/retry`, undefined, { 'idempotency-key': crypto.randomUUID() });
        await webhooksPage();
        say(`Retry queued (${text(res.status)}). Reload to follow it.`, 'ok');
      }) }, 'Retry'))],
    ], 'deliveries'),
  );
}

