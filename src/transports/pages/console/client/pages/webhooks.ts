/** The webhook endpoint (create, save, rotate, test) and its delivery log with retries. */
import { say } from '../../../pay/client/ui';
import { pcp, PcpError } from '../api';
import { attempt, content, formValues, h, showSecret, table, text } from '../dom';

export async function webhooksPage(): Promise<void> {
  const endpoint = await pcp.GET('/api/v1/webhook-endpoints').catch((err: unknown) => {
    if (err instanceof PcpError && err.status === 404) return null;
    throw err;
  });
  const deliveries = await pcp.GET('/api/v1/webhook-deliveries', { params: { query: { limit: 50 } } });
  const form = h(
    'form',
    { id: 'endpoint', class: 'panel' },
    h('h2', {}, 'Endpoint'),
    h('label', {}, 'URL ', h('input', { name: 'url', type: 'url', required: true, value: endpoint?.url ?? '', size: '50' })),
    h('label', {}, h('input', { type: 'checkbox', name: 'enabled', value: 'true', ...(endpoint?.enabled === false ? {} : { checked: true }) }), ' enabled'),
    h('button', { class: 'primary', type: 'submit' }, endpoint ? 'Save' : 'Create endpoint'),
    endpoint ? h('button', { id: 'rotate', type: 'button', click: () => void attempt(async () => {
      const res = await pcp.PUT('/api/v1/webhook-endpoints', { body: { url: endpoint.url, rotateSecret: true } });
      showSecret('New signing secret', text(res.secret));
    }) }, 'Rotate secret') : null,
    endpoint ? h('button', { id: 'send-test', type: 'button', click: () => void attempt(async () => {
      // A `ping` through the normal delivery path (docs/decisions.md "Console"); it shows in the log below.
      const res = await pcp.POST('/api/v1/webhook-endpoints/test');
      await webhooksPage();
      say(`Test event queued (delivery ${res.id}). Reload to follow it.`, 'ok');
    }) }, 'Send test event') : null,
  ) as HTMLFormElement;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(async () => {
      const v = formValues(form);
      const res = await pcp.PUT('/api/v1/webhook-endpoints', { body: { url: v.url, enabled: v.enabled === 'true' } });
      await webhooksPage();
      if (res.secret) showSecret('Signing secret', res.secret);
      say('Endpoint saved.', 'ok');
    });
  });
  content().replaceChildren(
    form,
    h('h2', {}, 'Deliveries'),
    table(deliveries.data, [
      ['Event', (r) => h('span', { class: 'delivery-event' }, r.eventType)],
      ['Status', (r) => h('span', { class: 'delivery-status' }, r.status)],
      ['Attempts', (r) => text(r.attempts)],
      ['Response', (r) => h('details', {}, h('summary', {}, text(r.responseStatus)), h('pre', {}, text(r.responseBody ?? r.lastError)))],
      ['', (r) => (r.status === 'succeeded' ? '' : h('button', { class: 'retry', type: 'button', click: () => void attempt(async () => {
        const res = await pcp.POST('/api/v1/webhook-deliveries/{id}/retry', { params: { path: { id: r.id } } });
        await webhooksPage();
        say(`Retry queued (${res.status}). Reload to follow it.`, 'ok');
      }) }, 'Retry'))],
    ], 'deliveries'),
  );
}
