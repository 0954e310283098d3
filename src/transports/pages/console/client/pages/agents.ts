/** Agents: the list and create form, one agent's page (policy, keys, pause, payments, mandates) and its owner wallet's actions. */
import { AGENT_SCOPES } from '../../../../../kernel/auth/scopes';
import { ENABLE_SIGNER_TYPES, ownerDomain, REVOKE_MANDATE_TYPES, WITHDRAW_TYPES } from '../../../../../modules/agents/owner-messages';
import { setupConnect } from '../../../pay/client/connect';
import { say } from '../../../pay/client/ui';
import type { Wallet } from '../../../pay/client/wallet';
import { call, PcpError } from '../api';
import { attempt, content, data, formValues, h, orgBase, type Row, showSecret, table, text } from '../dom';
import { randomNonce, sendUsdcTransfer, usdcUnits } from '../wallet-tx';

type List = { data: Row[]; hasMore: boolean };

/** The agent key the console creates holds every agent scope the server declares. */
const AGENT_KEY_SCOPES = AGENT_SCOPES.filter((s) => s.startsWith('agent:'));

export async function agentsPage(): Promise<void> {
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
    if (!(err instanceof PcpError) || err.details?.reason !== 'agent_owner_consent_required' || err.details.problem) throw err;
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
    const scopes = AGENT_KEY_SCOPES;
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

