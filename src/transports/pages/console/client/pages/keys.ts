/** API keys and OAuth clients: list, create with a scope picker (secret shown once), revoke. */
import { MERCHANT_SCOPES } from '../../../../../kernel/auth/scopes';
import { say } from '../../../pay/client/ui';
import { call } from '../api';
import { attempt, content, h, type Row, showSecret, table, text } from '../dom';

/** The scopes a merchant credential may take, as the server declares them: each resource's `X:*`, then each scope. */
const PICKABLE_SCOPES = [...new Set(MERCHANT_SCOPES.map((s) => `${s.split(':')[0]}:*`)), ...MERCHANT_SCOPES];

export async function keysPage(): Promise<void> {
  const keys = await call<Row[]>('GET', '/api/v1/api-keys');
  const form = h(
    'form',
    { id: 'create-key', class: 'panel' },
    h('h2', {}, 'Create a merchant key'),
    ...PICKABLE_SCOPES.map((s) => h('label', {}, h('input', { type: 'checkbox', name: 'scope', value: s }), ` ${s}`)),
    h('button', { class: 'primary', type: 'submit' }, 'Create key'),
  ) as HTMLFormElement;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(async () => {
      const scopes = [...form.querySelectorAll<HTMLInputElement>('input[name=scope]:checked')].map((i) => i.value);
      const key = await call<{ secret: string }>('POST', '/api/v1/api-keys', { scopes });
      await keysPage();
      showSecret('New API key', key.secret);
    });
  });
  content().replaceChildren(
    form,
    table(keys, [
      ['Prefix', (r) => h('code', {}, text(r.prefix))],
      ['Kind', (r) => text(r.kind)],
      ['Scopes', (r) => (r.scopes as string[]).join(' ')],
      ['Created', (r) => text(r.createdAt)],
      ['Last used', (r) => (r.lastUsedAt ? text(r.lastUsedAt) : 'never')],
      ['', (r) => (r.revokedAt ? `revoked ${text(r.revokedAt)}` : h('button', { class: 'danger', type: 'button', click: () => void attempt(async () => {
        if (!confirm(`Revoke ${text(r.prefix)}…? It stops working at once.`)) return;
        await call('POST', `/api/v1/api-keys/${text(r.id)}/revoke`);
        await keysPage();
        say('Key revoked.', 'ok');
      }) }, 'Revoke'))],
    ], 'keys'),
  );
}

/** OAuth clients (client-credentials grant): list, create with a scope picker (secret shown once), revoke. */
export async function oauthClientsPage(): Promise<void> {
  const clients = await call<Row[]>('GET', '/api/v1/oauth-clients');
  const form = h(
    'form',
    { id: 'create-oauth-client', class: 'panel' },
    h('h2', {}, 'Create an OAuth client'),
    ...PICKABLE_SCOPES.map((s) => h('label', {}, h('input', { type: 'checkbox', name: 'scope', value: s }), ` ${s}`)),
    h('button', { class: 'primary', type: 'submit' }, 'Create client'),
  ) as HTMLFormElement;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(async () => {
      const scopes = [...form.querySelectorAll<HTMLInputElement>('input[name=scope]:checked')].map((i) => i.value);
      const client = await call<{ clientId: string; clientSecret: string }>('POST', '/api/v1/oauth-clients', { scopes });
      await oauthClientsPage();
      showSecret(`Client secret of ${client.clientId}`, client.clientSecret);
    });
  });
  content().replaceChildren(
    form,
    table(clients.map((c) => ({ ...c, id: c.clientId })), [
      ['Client id', (r) => h('code', {}, text(r.clientId))],
      ['Scopes', (r) => (r.scopes as string[]).join(' ')],
      ['Created', (r) => text(r.createdAt)],
      ['', (r) => (r.revokedAt ? h('span', { class: 'revoked' }, `revoked ${text(r.revokedAt)}`) : h('button', { class: 'danger', type: 'button', click: () => void attempt(async () => {
        if (!confirm(`Revoke ${text(r.clientId)}? Its tokens stop working at once.`)) return;
        await call('POST', `/api/v1/oauth-clients/${encodeURIComponent(text(r.clientId))}/revoke`);
        await oauthClientsPage();
        say('OAuth client revoked.', 'ok');
      }) }, 'Revoke'))],
    ], 'oauth-clients'),
  );
}

