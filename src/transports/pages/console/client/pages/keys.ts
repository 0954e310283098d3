/** API keys and OAuth clients: list, create with a scope picker (secret shown once), revoke. */
import { MERCHANT_SCOPES } from '../../../../../kernel/auth/scopes';
import { say } from '../../../pay/client/ui';
import { pcp, type Schemas } from '../api';
import { attempt, type Column, content, h, panelForm, showSecret, table, text } from '../dom';

/** The scopes a merchant credential may take, as the server declares them: each resource's `X:*`, then each scope. */
const PICKABLE_SCOPES = [...new Set(MERCHANT_SCOPES.map((s) => `${s.split(':')[0]}:*`)), ...MERCHANT_SCOPES];

/** What both credential kinds show: their scopes and creation time (the API's schema of each). */
type Credential = { scopes: string[]; createdAt: string; revokedAt: string | null };

/** One credential page: its list, its create form and the secret it shows once, its revoke action. */
interface CredentialPage<T extends Credential> {
  /**
   * The page's names: the table's id, the create form's (`create-<form>`), its heading and button,
   * what the revoke confirmation warns and what the live region says once revoked.
   */
  names: { table: string; form: string; heading: string; submit: string; warning: string; revoked: string };
  list(): Promise<T[]>;
  /** Creates one with `scopes`; the label and secret to show once. */
  create(scopes: string[]): Promise<{ label: string; secret: string }>;
  /** The row's `data-id`, and its name in the confirmation. */
  id: (r: T) => string;
  name: (r: T) => string;
  /** The columns before Scopes and Created, and after them. */
  columns: [Array<Column<T>>, Array<Column<T>>];
  revoke(r: T): Promise<void>;
}

/** Renders a credential page; every action re-renders it. */
async function credentialPage<T extends Credential>(page: CredentialPage<T>): Promise<void> {
  const rows = await page.list();
  const { names } = page;
  const form = panelForm(`create-${names.form}`, names.heading, names.submit, PICKABLE_SCOPES.map((s) => h('label', {}, h('input', { type: 'checkbox', name: 'scope', value: s }), ` ${s}`)), async (_, form) => {
    const scopes = [...form.querySelectorAll<HTMLInputElement>('input[name=scope]:checked')].map((i) => i.value);
    const created = await page.create(scopes);
    await credentialPage(page);
    showSecret(created.label, created.secret);
  });
  const revoke = (r: T) => h('button', { class: 'danger', type: 'button', click: () => void attempt(async () => {
    if (!confirm(`Revoke ${page.name(r)}? ${names.warning}`)) return;
    await page.revoke(r);
    await credentialPage(page);
    say(names.revoked, 'ok');
  }) }, 'Revoke');
  content().replaceChildren(
    form,
    table(rows, [
      ...page.columns[0],
      ['Scopes', (r) => r.scopes.join(' ')],
      ['Created', (r) => r.createdAt],
      ...page.columns[1],
      ['', (r) => (r.revokedAt ? h('span', { class: 'revoked' }, `revoked ${r.revokedAt}`) : revoke(r))],
    ], names.table, page.id),
  );
}

/** Merchant API keys (`/api/v1/api-keys`). */
export function keysPage(): Promise<void> {
  return credentialPage<Schemas['ApiKeyDto']>({
    names: { table: 'keys', form: 'key', heading: 'Create a merchant key', submit: 'Create key', warning: 'It stops working at once.', revoked: 'Key revoked.' },
    list: () => pcp.GET('/api/v1/api-keys'),
    create: async (scopes) => ({ label: 'New API key', secret: (await pcp.POST('/api/v1/api-keys', { body: { scopes } })).secret }),
    id: (r) => r.id,
    name: (r) => `${r.prefix}…`,
    columns: [[['Prefix', (r) => h('code', {}, r.prefix)], ['Kind', (r) => r.kind]], [['Last used', (r) => text(r.lastUsedAt ?? 'never')]]],
    revoke: async (r) => void (await pcp.POST('/api/v1/api-keys/{id}/revoke', { params: { path: { id: r.id } } })),
  });
}

/** OAuth clients (client-credentials grant, `/api/v1/oauth-clients`). */
export function oauthClientsPage(): Promise<void> {
  return credentialPage<Schemas['OAuthClientDto']>({
    names: { table: 'oauth-clients', form: 'oauth-client', heading: 'Create an OAuth client', submit: 'Create client', warning: 'Its tokens stop working at once.', revoked: 'OAuth client revoked.' },
    list: () => pcp.GET('/api/v1/oauth-clients'),
    create: async (scopes) => {
      const client = await pcp.POST('/api/v1/oauth-clients', { body: { scopes } });
      return { label: `Client secret of ${client.clientId}`, secret: client.clientSecret };
    },
    id: (r) => r.clientId,
    name: (r) => r.clientId,
    columns: [[['Client id', (r) => h('code', {}, r.clientId)]], []],
    revoke: async (r) => void (await pcp.POST('/api/v1/oauth-clients/{clientId}/revoke', { params: { path: { clientId: r.clientId } } })),
  });
}
