/**
 * The console's one bundled script (docs/architecture.md §19). Reads the page's `data-*` (page,
 * org, item, csrf, chain-id) and talks only to this origin: `/console/api/*` for the session and
 * `/api/v1/*` as a `console` principal (session cookie, `X-CSRF-Token`, `X-Console-Organization`).
 * Everything the API returns is written as text (never as HTML).
 */
import { encodeFunctionData, erc20Abi, parseAbi, parseUnits } from 'viem';
import { ENABLE_SIGNER_TYPES, ownerDomain, REVOKE_MANDATE_TYPES, WITHDRAW_TYPES } from '../../../../modules/agents/owner-messages';
import { setupConnect } from '../../pay/client/connect';
import { say } from '../../pay/client/ui';
import { rpcCode, Wallet, WalletError } from '../../pay/client/wallet';
import { statementPage } from './statement';
import { refundPanel } from './refund';

const root = document.getElementById('page')!;
const data = root.dataset;

class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, readonly details: Record<string, unknown>, message: string) {
    super(message);
  }
}

/** A console API call: JSON in and out, the session's CSRF token and the organisation header on every request. */
async function call<T>(method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', ...extra };
  if (data.csrf) headers['x-csrf-token'] = data.csrf;
  if (data.org) headers['x-console-organization'] = data.org;
  else if (data.consoleAgent) headers['x-console-agent'] = data.consoleAgent;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', cache: 'no-store' });
  const text = await res.text();
  const json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  if (!res.ok) throw new ApiError(res.status, typeof json.code === 'string' ? json.code : 'internal', (json.details as Record<string, unknown>) ?? {}, typeof json.error === 'string' ? json.error : `HTTP ${res.status}`);
  return json as T;
}

type Row = Record<string, unknown>;
type List = { data: Row[]; has_more?: boolean; hasMore?: boolean };

/** `h('tag', {attr}, ...children)`: DOM built from text nodes only. */
function h(tag: string, attrs: Record<string, string | boolean | ((e: Event) => void)> = {}, ...children: Array<Node | string | null | undefined>): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === 'function') el.addEventListener(k, v);
    else if (v === true) el.setAttribute(k, '');
    else if (v !== false) el.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) el.append(c);
  return el;
}

function text(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return v.toString();
  return JSON.stringify(v);
}
const content = () => document.getElementById('content')!;
const orgBase = () => `/console/orgs/${data.org}`;

/** Runs `work`, reporting an API error in the live region. */
async function attempt(work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (err) {
    if (err instanceof ApiError) say(`${err.message} (${err.code}${typeof err.details.reason === 'string' ? `: ${err.details.reason}` : ''})`, 'bad');
    else if (err instanceof WalletError) say(err.message, 'bad');
    else say(`Something went wrong: ${(err as Error).message}`, 'bad');
  }
}

function table(rows: Row[], columns: Array<[string, (r: Row) => Node | string]>, id: string): HTMLElement {
  return h(
    'table',
    { id },
    h('thead', {}, h('tr', {}, ...columns.map(([label]) => h('th', {}, label)))),
    h('tbody', {}, ...rows.map((r) => h('tr', { 'data-id': typeof r.id === 'string' ? r.id : '' }, ...columns.map(([, cell]) => h('td', {}, cell(r)))))),
  );
}

function formValues(form: HTMLFormElement): Record<string, string> {
  return Object.fromEntries([...new FormData(form).entries()].map(([k, v]) => [k, typeof v === 'string' ? v.trim() : '']));
}

/** Shows a secret once with a copy button. */
function showSecret(label: string, secret: string): void {
  const code = h('code', { id: 'secret' }, secret);
  const copy = h('button', { type: 'button', click: () => void navigator.clipboard?.writeText(secret).then(() => say('Copied.', 'ok')) }, 'Copy');
  document.getElementById('secret-panel')?.remove();
  content().prepend(h('div', { id: 'secret-panel', class: 'panel' }, h('strong', {}, label), h('p', { class: 'muted' }, 'Shown once: store it now.'), code, ' ', copy));
}

function signInPage(): void {
  const chainId = Number(data.chainId);
  document.getElementById('wallet')!.hidden = false;
  setupConnect(
    () => chainId,
    (wallet) => {
      const actions = document.getElementById('actions')!;
      actions.replaceChildren(
        h('button', {
          id: 'sign-in',
          class: 'primary',
          type: 'button',
          click: () =>
            void attempt(async () => {
              const n = await call<{ nonce: string; domain: string; uri: string; chainId: number }>('GET', '/console/api/nonce');
              const now = new Date();
              // EIP-4361 message format, field order as the standard gives it.
              const message = [
                `${n.domain} wants you to sign in with your Ethereum account:`,
                wallet.account,
                '',
                'Sign in to the payments console.',
                '',
                `URI: ${n.uri}`,
                'Version: 1',
                `Chain ID: ${n.chainId}`,
                `Nonce: ${n.nonce}`,
                `Issued At: ${now.toISOString()}`,
                `Expiration Time: ${new Date(now.getTime() + 5 * 60_000).toISOString()}`,
              ].join('\n');
              say('Confirm in your wallet.');
              const signature = await wallet.personalSign(message);
              await call('POST', '/console/api/sign-in', { message, signature });
              location.assign('/console');
            }),
        }, 'Sign in with Ethereum'),
      );
    },
  );
}

function wireSignOut(): void {
  document.getElementById('sign-out')?.addEventListener('click', () =>
    void attempt(async () => {
      await call('POST', '/console/api/sign-out');
      location.assign('/console');
    }),
  );
}

function homePage(): void {
  const form = document.getElementById('create-org') as HTMLFormElement;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(async () => {
      const v = formValues(form);
      const org = await call<{ id: string }>('POST', '/console/api/organizations', { name: v.name, handle: v.handle, ...(v.payoutAddress ? { payoutAddress: v.payoutAddress } : {}) });
      location.assign(`/console/orgs/${org.id}`);
    });
  });
}

async function overviewPage(): Promise<void> {
  const [me, endpoint, deliveries, checkouts] = await Promise.all([
    call<{ organization: Row; verification: Row }>('GET', '/api/v1/me'),
    call<Row>('GET', '/api/v1/webhook-endpoints').catch(() => null),
    call<List>('GET', '/api/v1/webhook-deliveries?limit=100').catch(() => ({ data: [] })),
    call<List>('GET', '/api/v1/checkout-sessions?limit=100').catch(() => ({ data: [] })),
  ]);
  const since = Date.now() - 24 * 3600_000;
  const recent = (l: List) => l.data.filter((r) => Date.parse(text(r.createdAt ?? r.created_at)) >= since);
  const failed = deliveries.data.filter((d) => d.status === 'failed' || d.status === 'retrying');
  const status = String(me.verification.status);
  const next = status === 'verified' ? 'Nothing to do.' : status === 'pending' ? 'Finish the identity step.' : 'Start verification.';
  content().replaceChildren(
    ...(failed.length ? [h('p', { id: 'webhook-warning', class: 'status', 'data-tone': 'bad' }, `${failed.length} webhook deliveries failing — see Webhooks.`)] : []),
    h('div', { class: 'panel' }, h('h2', {}, 'Verification'), h('p', {}, h('span', { id: 'kyb-status', class: 'status' }, status), ' ', next, ' ', h('a', { href: `${orgBase()}/verification` }, 'Verification'))),
    h('div', { class: 'panel' }, h('h2', {}, 'Payout'), h('p', {}, h('code', { id: 'payout-address' }, text(me.organization.payoutAddress))),
      h('p', {}, h('strong', { id: 'payout-usdc' }, '…'), ' USDC · ', h('strong', { id: 'payout-eth' }, '…'), ' ETH ', h('span', { id: 'payout-block', class: 'muted' }))),
    h('div', { class: 'panel' }, h('h2', {}, 'Last 24 hours'), h('p', { id: 'counts' }, `${recent(checkouts).length} checkouts · ${recent(deliveries).length} webhook deliveries`)),
    h('p', { class: 'muted' }, endpoint ? `Webhook endpoint: ${text(endpoint.url)}` : 'No webhook endpoint yet.'),
  );
  // Balances come from the chain (bounded by RPC_TIMEOUT_MS server-side): filled in after the page,
  // "unavailable" when the node does not answer, so a slow node never holds the overview.
  const fill = (usdc: string, eth: string, block: string) => {
    document.getElementById('payout-usdc')!.textContent = usdc;
    document.getElementById('payout-eth')!.textContent = eth;
    document.getElementById('payout-block')!.textContent = block;
  };
  await call<Row>('GET', '/api/v1/payout-balance').then(
    (b) => fill(text(b.usdc), text(b.eth), b.blockNumber === null ? '' : `(block ${text(b.blockNumber)})`),
    () => fill('unavailable', 'unavailable', ''),
  );
}

const MERCHANT_SCOPES = ['checkout:*', 'invoices:*', 'offerings:*', 'escrow:*', 'verification:*', 'webhooks:*', 'checkout:read', 'invoices:read', 'escrow:read', 'webhooks:read', 'balance:read'];

async function keysPage(): Promise<void> {
  const keys = await call<Row[]>('GET', '/api/v1/api-keys');
  const form = h(
    'form',
    { id: 'create-key', class: 'panel' },
    h('h2', {}, 'Create a merchant key'),
    ...MERCHANT_SCOPES.map((s) => h('label', {}, h('input', { type: 'checkbox', name: 'scope', value: s }), ` ${s}`)),
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
async function oauthClientsPage(): Promise<void> {
  const clients = await call<Row[]>('GET', '/api/v1/oauth-clients');
  const form = h(
    'form',
    { id: 'create-oauth-client', class: 'panel' },
    h('h2', {}, 'Create an OAuth client'),
    ...MERCHANT_SCOPES.map((s) => h('label', {}, h('input', { type: 'checkbox', name: 'scope', value: s }), ` ${s}`)),
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

async function agentsPage(): Promise<void> {
  if (data.item) return agentPage(data.item);
  const agents = await call<Row[]>('GET', '/api/v1/agents');
  const form = h(
    'form',
    { id: 'create-agent', class: 'panel' },
    h('h2', {}, 'Create an agent'),
    h('label', {}, 'Slug ', h('input', { name: 'slug', required: true })),
    h('label', {}, 'Owner address ', h('input', { name: 'ownerAddress', required: true, value: data.address ?? '' })),
    h('label', {}, 'Name ', h('input', { name: 'name' })),
    h('button', { class: 'primary', type: 'submit' }, 'Create agent'),
  ) as HTMLFormElement;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(async () => {
      const v = formValues(form);
      // Another owner address than the signed-in one: that address's wallet proves it (AgentConsent create_agent).
      const agent = await withOwnerConsent((consent) => call<{ id: string }>('POST', '/api/v1/agents', { slug: v.slug, ownerAddress: v.ownerAddress, ...(v.name ? { name: v.name } : {}), ...(consent ? { ownerProof: consent } : {}) }, { 'idempotency-key': crypto.randomUUID() }));
      location.assign(`${orgBase()}/agents/${agent.id}`);
    });
  });
  content().replaceChildren(
    form,
    table(agents, [
      ['Agent', (r) => h('a', { href: `${orgBase()}/agents/${text(r.id)}` }, text(r.slug))],
      ['Signer', (r) => ((r.signer as Row).enabled ? 'enabled' : 'disabled')],
      ['Paused', (r) => (r.paused ? 'paused' : 'active')],
      ['Used today', (r) => text((r.usage as Row).usedToday)],
    ], 'agents'),
  );
}

/** 32 random bytes as 0x hex: the single-use nonce of an owner message. */
function randomNonce(): string {
  return `0x${Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** USDC decimal text ("12.50") as base units (6 decimals). @throws Error when it is not a positive amount with at most 6 decimals. */
function usdcUnits(amount: string): bigint {
  if (!/^\d+(\.\d{1,6})?$/.test(amount)) throw new Error(`"${amount}" is not a USDC amount such as 12.50`);
  const units = parseUnits(amount, 6);
  if (units <= 0n) throw new Error('The amount must be more than zero');
  return units;
}

/**
 * Sends a transaction `{to, data}` from the connected account (EIP-1193 `eth_sendTransaction`) and
 * waits, bounded (2 min), for its receipt (`eth_getTransactionReceipt`). `what` names it in messages.
 * @returns the transaction hash once mined with status 1.
 * @throws WalletError rejected (4001); Error when it reverted or is not mined in time (it may still
 *   be: the message says so, never that nothing moved).
 */
async function sendTransaction(wallet: Wallet, to: string, data: `0x${string}`, what: string): Promise<string> {
  await wallet.ensureChain();
  let hash: string;
  try {
    hash = (await wallet.provider.request({ method: 'eth_sendTransaction', params: [{ from: wallet.account, to: to as `0x${string}`, data }] })) as string;
  } catch (err) {
    if (rpcCode(err) === 4001) throw new WalletError('rejected', `You rejected the ${what} in your wallet. Nothing was sent.`);
    throw new WalletError('other', `Your wallet could not send: ${(err as Error).message.split('\n')[0]}`);
  }
  say(`The ${what} was sent (${hash}); waiting for it to be mined…`);
  for (const until = Date.now() + 120_000; Date.now() < until; await new Promise((r) => setTimeout(r, 1000))) {
    const receipt = (await wallet.provider.request({ method: 'eth_getTransactionReceipt', params: [hash as `0x${string}`] }).catch(() => null)) as { status?: string } | null;
    if (receipt?.status === '0x1') return hash;
    if (receipt?.status === '0x0') throw new Error(`The ${what} ${hash} reverted: nothing changed.`);
  }
  throw new Error(`The ${what} ${hash} is not mined yet; it may still be. Reload later to see it.`);
}

/** A plain USDC `transfer(to, units)` from the connected account (see {@link sendTransaction}). */
function sendUsdcTransfer(wallet: Wallet, usdc: string, to: string, units: bigint): Promise<string> {
  return sendTransaction(wallet, usdc, encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to as `0x${string}`, units] }), 'transfer');
}

const POLICY_FIELDS = ['perTransactionMax', 'dailyLimit', 'monthlyLimit', 'approvalThreshold', 'validFrom', 'expiresAt'] as const;

/** The agent owner's AgentConsent body (DESIGN §19). */
type Consent = { nonce: string; deadline: number; signature: string };

/**
 * Runs an agent action; when the API answers 403 `agent_owner_consent_required` (another address
 * raising the policy, resuming, creating a key that may spend), asks the agent owner's address in the
 * connected wallet to sign the AgentConsent the refusal offers (a wallet without that account
 * refuses) and runs the action once more with it.
 */
async function withOwnerConsent<T>(run: (consent?: Consent) => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!(err instanceof ApiError) || err.details.reason !== 'agent_owner_consent_required' || err.details.problem) throw err;
    const owner = text(err.details.ownerAddress);
    if (!ownerWallet) throw new Error(`This needs the consent of the agent owner ${owner}: connect a wallet holding that address (Connect wallet), then try again.`);
    const typed = err.details.typedData as { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; primaryType: string; message: Record<string, unknown> };
    say(`This needs the agent owner's consent: confirm in the wallet of ${owner}.`);
    let signature: string;
    try {
      signature = await ownerWallet.signTypedData(typed, owner);
    } catch (e) {
      throw new Error(`The agent owner ${owner} did not consent (${(e as Error).message}). Nothing changed.`);
    }
    return run({ nonce: text(typed.message.nonce), deadline: Number(typed.message.deadline), signature });
  }
}

async function agentPage(id: string): Promise<void> {
  const [agent, balance, payments, mandates] = await Promise.all([
    call<Row>('GET', `/api/v1/agents/${id}`),
    call<Row>('GET', `/api/v1/agents/${id}/balance`).catch(() => null),
    call<List>('GET', `/api/v1/agents/${id}/payments?limit=50`),
    call<List>('GET', `/api/v1/agents/${id}/mandates?limit=50`),
  ]);
  const policy = (agent.policy as Row | null) ?? {};
  const signer = agent.signer as Row;
  const policyForm = h(
    'form',
    { id: 'policy', class: 'panel' },
    h('h2', {}, 'Policy'),
    ...POLICY_FIELDS.map((f) => h('label', {}, `${f} `, h('input', { name: f, value: policy[f] ? text(policy[f]) : '' }))),
    h('label', {}, 'allowedRecipients ', h('input', { name: 'allowedRecipients', value: ((policy.allowedRecipients as string[]) ?? []).join(',') })),
    h('label', {}, 'mode ', h('select', { name: 'mode' }, ...['autonomous', 'mandate'].map((m) => h('option', { value: m, ...(policy.mode === m ? { selected: true } : {}) }, m)))),
    h('button', { class: 'primary', type: 'submit' }, 'Save policy'),
  ) as HTMLFormElement;
  policyForm.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(async () => {
      const v = formValues(policyForm);
      const body: Record<string, unknown> = { mode: v.mode };
      for (const f of POLICY_FIELDS) if (v[f]) body[f] = v[f];
      if (v.allowedRecipients) body.allowedRecipients = v.allowedRecipients.split(',').map((s) => s.trim()).filter(Boolean);
      await withOwnerConsent((consent) => call('PUT', `/api/v1/agents/${id}/policy`, consent ? { ...body, consent } : body));
      await agentPage(id);
      say('Policy saved.', 'ok');
    });
  });
  const keyButton = h('button', { id: 'create-agent-key', type: 'button', click: () => void attempt(async () => {
    const scopes = ['agent:pay', 'agent:balance:read', 'agent:escrow:fund', 'agent:mandate'];
    const key = await withOwnerConsent((consent) => call<{ secret: string }>('POST', `/api/v1/agents/${id}/keys`, consent ? { scopes, consent } : { scopes }));
    showSecret('New agent key', key.secret);
  }) }, 'Create agent key');
  const pause = h('button', { id: 'pause', type: 'button', click: () => void attempt(async () => {
    if (agent.paused) await withOwnerConsent((consent) => call('POST', `/api/v1/agents/${id}/resume`, consent ? { consent } : undefined));
    else await call('POST', `/api/v1/agents/${id}/pause`);
    await agentPage(id);
  }) }, agent.paused ? 'Resume' : 'Pause');
  content().replaceChildren(
    h('p', {}, h('strong', {}, text(agent.slug)), ' · owner ', h('code', {}, text(agent.ownerAddress)), ' · signer ', h('code', {}, text(signer.address)), ' ',
      h('span', { id: 'signer-status', class: 'status', 'data-enabled': String(signer.enabled) }, signer.enabled ? 'signer enabled' : 'signer disabled'), ' ',
      h('span', { id: 'paused', class: 'status' }, agent.paused ? 'paused' : 'active')),
    h('p', {}, 'Signer balance ', h('strong', { id: 'signer-balance' }, balance ? text(balance.onChainBalance) : '—'), ' USDC · owner ', h('span', { id: 'owner-balance' }, balance ? text(balance.ownerBalance) : '—'), ' USDC'),
    h('p', { id: 'usage' }, `Used today ${text((agent.usage as Row).usedToday)} · this month ${text((agent.usage as Row).usedThisMonth)} USDC`),
    h('p', {}, pause, keyButton),
    policyForm,
    h('h2', {}, 'Payments'),
    table(payments.data, [['Id', (r) => text(r.id)], ['Status', (r) => text(r.status)], ['To', (r) => text(r.to)], ['Amount', (r) => text(r.amount)], ['Tx', (r) => text(r.txHash)], ['Created', (r) => text(r.createdAt)]], 'payments'),
    h('h2', {}, 'Mandates'),
    table(mandates.data, [['Id', (r) => text(r.id)], ['Status', (r) => h('span', { class: 'mandate-status' }, text(r.status))], ['Used', (r) => text(r.usedAmount)], ['Total', (r) => text(r.totalAmount)], ['', (r) => (r.status === 'revoked' ? '' : h('button', { class: 'revoke-mandate danger', type: 'button', click: () => void attempt(async () => {
      // The owner's EIP-712 RevokeMandate, posted to the public owner-signed route (docs/architecture.md §14).
      if (!ownerWallet) throw new Error('Connect the owner wallet first.');
      if (!confirm(`Revoke mandate ${text(r.id)}? It stops covering payments at once.`)) return;
      const nonce = randomNonce();
      const deadline = Math.floor(Date.now() / 1000) + 600;
      say('Confirm in your wallet.');
      const signature = await ownerWallet.signTypedData({ domain: ownerDomain(chainId), types: REVOKE_MANDATE_TYPES, primaryType: 'RevokeMandate', message: { mandateId: r.id, nonce, deadline: String(deadline) } });
      await call('POST', `/api/v1/mandates/${text(r.id)}/revoke`, { nonce, deadline, signature });
      await agentPage(id);
      say('Mandate revoked.', 'ok');
    }) }, 'Revoke'))]], 'mandates'),
  );
  // The owner wallet signs EnableSigner (EIP-712), as the signer page does.
  document.getElementById('wallet')!.hidden = false;
  if (ownerWallet) ownerActions(id, agent, ownerWallet);
  else setupConnect(() => chainId, (wallet) => {
    ownerWallet = wallet;
    ownerActions(id, agent, wallet);
  });
}

/** The connected owner wallet of the agent page (kept across re-renders of the page). */
let ownerWallet: Wallet | null = null;
const chainId = Number(data.chainId);

/**
 * The wallet's actions on an agent: EnableSigner/disable (EIP-712), top up (a plain USDC transfer
 * from the wallet to the session signer, DESIGN §19) and Withdraw (EIP-712 Withdraw{agentId,
 * amount, nonce, deadline}, amount in base units, posted with the decimal text to the owner-signed
 * route of docs/architecture.md §13).
 */
function ownerActions(id: string, agent: Row, wallet: Wallet): void {
  const signer = agent.signer as Row;
  const amountForm = (formId: string, label: string, run: (units: bigint, amount: string) => Promise<void>) => {
    const form = h('form', { id: formId }, h('label', {}, `${label} amount (USDC) `, h('input', { name: 'amount', inputmode: 'decimal', required: true, placeholder: '10.00' })), h('button', { type: 'submit' }, label)) as HTMLFormElement;
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void attempt(async () => {
        const amount = formValues(form).amount;
        await run(usdcUnits(amount), amount);
      });
    });
    return form;
  };
  const topUp = amountForm('top-up', 'Top up', async (units) => {
    if (!signer.address) throw new Error('This agent has no session signer.');
    if (!data.usdc) throw new Error('The USDC contract is unknown to this page.');
    say('Confirm the transfer in your wallet.');
    await sendUsdcTransfer(wallet, data.usdc, text(signer.address), units);
    await agentPage(id);
    say(`Topped up: the signer holds ${document.getElementById('signer-balance')?.textContent ?? '?'} USDC.`, 'ok');
  });
  const withdraw = amountForm('withdraw', 'Withdraw', async (units, amount) => {
    const nonce = randomNonce();
    const deadline = Math.floor(Date.now() / 1000) + 600;
    say('Confirm in your wallet.');
    const signature = await wallet.signTypedData({ domain: ownerDomain(chainId), types: WITHDRAW_TYPES, primaryType: 'Withdraw', message: { agentId: id, amount: units.toString(), nonce, deadline: String(deadline) } });
    const res = await call<{ txHash: string; amount: string }>('POST', `/api/v1/agents/${id}/withdraw`, { amount, nonce, deadline, signature });
    await agentPage(id);
    say(`Withdrew ${res.amount} USDC to the owner (${res.txHash}).`, 'ok');
  });
  {
    const actions = document.getElementById('actions')!;
    actions.replaceChildren(topUp, withdraw, h('button', { id: 'toggle-signer', class: 'primary', type: 'button', click: () => void attempt(async () => {
      const want = !(signer.enabled as boolean);
      const nonce = randomNonce();
      const deadline = Math.floor(Date.now() / 1000) + 600;
      say('Confirm in your wallet.');
      const signature = await wallet.signTypedData({ domain: ownerDomain(chainId), types: ENABLE_SIGNER_TYPES, primaryType: 'EnableSigner', message: { agentId: id, signer: signer.address, enabled: want, nonce, deadline: String(deadline) } });
      await call('POST', `/api/v1/agents/${id}/signer`, { enabled: want, nonce, deadline, signature });
      await agentPage(id);
      say(want ? 'Session signer enabled.' : 'Session signer disabled.', 'ok');
    }) }, signer.enabled ? 'Disable the session signer' : 'Enable the session signer'));
  }
}

async function webhooksPage(): Promise<void> {
  const endpoint = await call<Row>('GET', '/api/v1/webhook-endpoints').catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 404) return null;
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

const LISTS: Record<string, { path: string; columns: Array<[string, (r: Row) => Node | string]> }> = {
  checkouts: { path: '/api/v1/checkout-sessions', columns: [['Status', (r) => text(r.status)], ['Amount', (r) => text(r.amount)], ['Description', (r) => text(r.description)], ['Created', (r) => text(r.createdAt)]] },
  escrows: { path: '/api/v1/escrows', columns: [['Status', (r) => text(r.status)], ['Amount', (r) => text(r.amount)], ['Buyer', (r) => text(r.buyer ?? r.buyerAddress)], ['Created', (r) => text(r.createdAt)]] },
  invoices: { path: '/api/v1/invoices', columns: [['Status', (r) => text(r.status)], ['Amount', (r) => text(r.amount ?? r.total)], ['Created', (r) => text(r.createdAt)]] },
  offerings: { path: '/api/v1/offerings', columns: [['Name', (r) => text(r.name ?? r.title)], ['Price', (r) => text(r.price ?? r.amount)], ['Created', (r) => text(r.createdAt)]] },
};

/** CheckoutEscrow's seller functions (libs/contracts/CheckoutEscrow.sol): the payout wallet calls them itself. */
const SELLER_ABI = parseAbi(['function accept(bytes32 escrowId)', 'function markDelivered(bytes32 escrowId)', 'function decline(bytes32 escrowId)']);

/** The seller actions of the escrow API (POST /api/v1/escrows/{id}/{action}) with their contract function and allowed states. */
const SELLER_ACTIONS = [
  { action: 'accept', fn: 'accept', label: 'Accept', from: ['funded'], done: 'Escrow accepted.' },
  { action: 'mark-delivered', fn: 'markDelivered', label: 'Mark delivered', from: ['accepted'], done: 'Marked delivered: the inspection window runs.' },
  { action: 'decline', fn: 'decline', label: 'Decline and refund', from: ['funded', 'accepted'], done: 'Declined: the buyer is refunded.' },
] as const;

/** The wallet connected on a checkout or escrow page (kept across re-renders). */
let actionWallet: Wallet | null = null;

/**
 * The buttons of the seller actions `escrow` allows now (docs/api.md "Escrow action rules"): each
 * sends the contract call from the connected wallet (it must be the escrow's seller, the payout
 * address it was funded to), waits for the receipt (bounded), then reports the hash to
 * `POST /api/v1/escrows/{id}/{action}` (the REST operation; the Idempotency-Key is derived from the
 * transaction hash, so a retry of the same report is a replay). Empty unless the organisation is the seller.
 */
function sellerActions(escrow: Row): HTMLElement[] {
  if (escrow.role !== 'seller' && escrow.role !== 'buyer_and_seller') return [];
  const seller = text((escrow.seller as Row).address);
  const chain = escrow.chain as Row;
  return SELLER_ACTIONS.filter((a) => (a.from as readonly string[]).includes(text(escrow.status))).map((a) =>
    h('button', { id: `escrow-${a.action}`, class: a.action === 'decline' ? 'danger' : 'primary', type: 'button', click: () => void attempt(async () => {
      if (!actionWallet) throw new Error('Connect the payout wallet first.');
      if (actionWallet.account.toLowerCase() !== seller.toLowerCase()) throw new Error(`Only the seller's payout wallet ${seller} can ${a.label.toLowerCase()}; connected: ${actionWallet.account}.`);
      if (a.action === 'decline' && !confirm('Decline this escrow? The buyer is refunded in full.')) return;
      say('Confirm the transaction in your wallet.');
      const txHash = await sendTransaction(actionWallet, text(chain.contract), encodeFunctionData({ abi: SELLER_ABI, functionName: a.fn, args: [text(chain.escrowKey) as `0x${string}`] }), `${a.label.toLowerCase()} transaction`);
      await call('POST', `/api/v1/escrows/${text(escrow.id)}/${a.action}`, { txHash }, { 'idempotency-key': `console-${a.action}-${txHash}` });
      await listPage(data.page!);
      say(a.done, 'ok');
    }) }, a.label),
  );
}

async function listPage(section: string, after?: string): Promise<void> {
  const spec = LISTS[section];
  if (data.item) {
    const item = await call<Row>('GET', `${spec.path}/${data.item}`);
    // The chain-event timeline is the escrow's `transactions` (GET /api/v1/escrows/{id}): a checkout
    // shows the one its funding created (escrowId), once funded.
    const escrow = section === 'escrows' ? item : typeof item.escrowId === 'string' ? await call<Row>('GET', `/api/v1/escrows/${item.escrowId}`) : null;
    const events = ((escrow?.transactions as Row[] | undefined) ?? []).slice().sort((a, b) => Number(a.blockNumber) - Number(b.blockNumber));
    const actions = escrow ? sellerActions(escrow) : [];
    const refund = section === 'checkouts' ? refundPanel(item, { call, attempt, say, wallet: () => actionWallet, signedIn: data.address, refresh: () => listPage(section) }) : null;
    content().replaceChildren(
      ...(refund ? [refund] : []),
      ...(actions.length ? [h('div', { id: 'seller-actions', class: 'panel' }, h('h2', {}, 'Seller actions'), h('p', { class: 'muted' }, 'Signed and sent by the payout wallet ', h('code', {}, text((escrow!.seller as Row).address)), ', then reported to the API.'), ...actions)] : []),
      table(Object.entries(item).filter(([k]) => k !== 'transactions').map(([k, v]) => ({ k, v })), [['Field', (r) => String(r.k)], ['Value', (r) => h('span', { 'data-field': String(r.k) }, text(r.v))]], 'detail'),
      h('h2', {}, 'Chain events'),
      escrow && section !== 'escrows' ? h('p', {}, 'Escrow ', h('a', { href: `${orgBase()}/escrows/${text(escrow.id)}` }, text(escrow.id)), ' · ', h('span', { id: 'escrow-status', class: 'status' }, text(escrow.status))) : '',
      events.length
        ? table(events, [['Action', (r) => h('span', { class: 'chain-action' }, text(r.action))], ['Transaction', (r) => h('code', { class: 'chain-tx' }, text(r.txHash))], ['Block', (r) => h('span', { class: 'chain-block' }, text(r.blockNumber))], ['From', (r) => text(r.from)], ['Recorded', (r) => text(r.recordedAt)]], 'timeline')
        : h('p', { id: 'timeline-empty', class: 'muted' }, 'No chain event yet.'),
    );
    const panel = document.getElementById('wallet');
    if (panel && (actions.length || refund)) {
      panel.hidden = false;
      if (!actionWallet) setupConnect(() => chainId, (wallet) => {
        actionWallet = wallet;
      });
    }
    return;
  }
  const page = await call<List>('GET', `${spec.path}?limit=20${after ? `&starting_after=${encodeURIComponent(after)}` : ''}`);
  const more = page.has_more ?? page.hasMore;
  content().replaceChildren(
    table(page.data, [['Id', (r) => h('a', { href: `${orgBase()}/${section}/${text(r.id)}` }, text(r.id))], ...spec.columns], section),
    more ? h('button', { id: 'next', type: 'button', click: () => void attempt(() => listPage(section, String(page.data[page.data.length - 1].id))) }, 'Next page') : '',
  );
}

async function verificationPage(): Promise<void> {
  const v = await call<Row>('GET', '/api/v1/verification');
  content().replaceChildren(
    h('p', {}, 'Status: ', h('span', { id: 'kyb-status', class: 'status' }, text(v.status))),
    table(Object.entries(v).map(([k, val]) => ({ k, v: val })), [['Field', (r) => String(r.k)], ['Value', (r) => text(r.v)]], 'verification'),
    h('button', { id: 'start-verification', class: 'primary', type: 'button', click: () => void attempt(async () => {
      const res = await call<Row>('POST', '/api/v1/verification/start', {}, { 'idempotency-key': crypto.randomUUID() });
      const url = res.verificationUrl ?? res.url ?? (res.identity as Row | undefined)?.url;
      say(url ? `Continue at ${text(url)}` : 'Verification started.', 'ok');
      await verificationPage();
    }) }, 'Start verification'),
  );
}

async function start(): Promise<void> {
  wireSignOut();
  switch (data.page) {
    case 'signin': return signInPage();
    case 'home': return homePage();
    case 'overview': return overviewPage();
    case 'keys': return keysPage();
    case 'oauth-clients': return oauthClientsPage();
    case 'agents': return agentsPage();
    case 'webhooks': return webhooksPage();
    case 'verification': return verificationPage();
    case 'statement': return statementPage(data, content());
    case 'checkouts':
    case 'escrows':
    case 'invoices':
    case 'offerings':
      return listPage(data.page);
  }
}

void attempt(start).finally(() => (root.dataset.ready = 'true'));
