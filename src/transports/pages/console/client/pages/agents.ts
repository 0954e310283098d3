/** Agents: the list and create form, one agent's page (policy, keys, pause, payments, mandates) and its owner wallet's actions. */
import { AGENT_SCOPES } from '../../../../../kernel/auth/scopes';
import { ENABLE_SIGNER_TYPES, ownerDomain, REVOKE_MANDATE_TYPES, WITHDRAW_TYPES } from '../../../../../modules/agents/owner-messages';
import { setupConnect } from '../../../pay/client/connect';
import { say } from '../../../pay/client/ui';
import type { Wallet } from '../../../pay/client/wallet';
import type { AgentConsentRefusal } from '../../../../../modules/agents/agent-consent';
import { pcp, PcpError, type Schemas } from '../api';
import { attempt, content, data, formValues, h, orgBase, panelForm, showSecret, table, text } from '../dom';
import { randomNonce, sendUsdcTransfer, usdcUnits } from '../wallet-tx';

/** The agent key the console creates holds every agent scope the server declares. */
const AGENT_KEY_SCOPES = AGENT_SCOPES.filter((s) => s.startsWith('agent:'));

export async function agentsPage(): Promise<void> {
  if (data.item) return agentPage(data.item);
  const agents = await pcp.GET('/api/v1/agents');
  const form = panelForm('create-agent', 'Create an agent', 'Create agent', [
    h('label', {}, 'Slug ', h('input', { name: 'slug', required: true })),
    h('label', {}, 'Owner address ', h('input', { name: 'ownerAddress', required: true, value: data.address ?? '' })),
    h('label', {}, 'Name ', h('input', { name: 'name' })),
  ], async (v) => {
    // Another owner address than the signed-in one: that address's wallet proves it (AgentConsent create_agent).
    const agent = await withOwnerConsent((consent) => pcp.POST('/api/v1/agents', { body: { slug: v.slug, ownerAddress: v.ownerAddress, ...(v.name ? { name: v.name } : {}), ...(consent ? { ownerProof: consent } : {}) } }));
    location.assign(`${orgBase()}/agents/${agent.id}`);
  });
  content().replaceChildren(
    form,
    table(agents, [
      ['Agent', (r) => h('a', { href: `${orgBase()}/agents/${r.id}` }, r.slug)],
      ['Signer', (r) => (r.signer.enabled ? 'enabled' : 'disabled')],
      ['Paused', (r) => (r.paused ? 'paused' : 'active')],
      ['Used today', (r) => r.usage.usedToday],
    ], 'agents'),
  );
}

/** The policy's text fields: each is a field of the policy the API answers (AgentPolicyDto) and of the body it takes (PolicyDto). */
const POLICY_FIELDS = ['perTransactionMax', 'dailyLimit', 'monthlyLimit', 'approvalThreshold', 'validFrom', 'expiresAt'] as const satisfies ReadonlyArray<keyof Schemas['AgentPolicyDto'] & keyof Schemas['PolicyDto']>;

/** The policy modes, every one the API's schema names (a mode added to AgentPolicyDto fails the typecheck here). */
const POLICY_MODES = Object.keys({ autonomous: 0, mandate: 0 } satisfies Record<Schemas['AgentPolicyDto']['mode'], 0>);

/** The agent owner's AgentConsent body (DESIGN §19). */
type Consent = Schemas['AgentConsentDto'];

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
    // The refusal's details as the server declares them (AgentConsentRefusal, agent-consent.ts): the
    // OpenAPI document types error details loosely, so the page names the server's type, not a guess.
    const { ownerAddress: owner, typedData: typed } = err.details as unknown as AgentConsentRefusal;
    if (!ownerWallet) throw new Error(`This needs the consent of the agent owner ${owner}: connect a wallet holding that address (Connect wallet), then try again.`);
    say(`This needs the agent owner's consent: confirm in the wallet of ${owner}.`);
    let signature: string;
    try {
      signature = await ownerWallet.signTypedData(typed, owner);
    } catch (e) {
      throw new Error(`The agent owner ${owner} did not consent (${(e as Error).message}). Nothing changed.`);
    }
    return run({ nonce: typed.message.nonce, deadline: typed.message.deadline, signature });
  }
}

async function agentPage(id: string): Promise<void> {
  const path = { id };
  const [agent, balance, payments, mandates] = await Promise.all([
    pcp.GET('/api/v1/agents/{id}', { params: { path } }),
    pcp.GET('/api/v1/agents/{id}/balance', { params: { path } }).catch(() => null),
    pcp.GET('/api/v1/agents/{id}/payments', { params: { path, query: { limit: 50 } } }),
    pcp.GET('/api/v1/agents/{id}/mandates', { params: { path, query: { limit: 50 } } }),
  ]);
  const policy = agent.policy;
  const signer = agent.signer;
  const policyForm = panelForm('policy', 'Policy', 'Save policy', [
    ...POLICY_FIELDS.map((f) => h('label', {}, `${f} `, h('input', { name: f, value: policy?.[f] ?? '' }))),
    h('label', {}, 'allowedRecipients ', h('input', { name: 'allowedRecipients', value: (policy?.allowedRecipients ?? []).join(',') })),
    h('label', {}, 'mode ', h('select', { name: 'mode' }, ...POLICY_MODES.map((m) => h('option', { value: m, ...(policy?.mode === m ? { selected: true } : {}) }, m)))),
  ], async (v) => {
    const body: Schemas['PolicyDto'] = { mode: v.mode as Schemas['PolicyDto']['mode'] };
    for (const f of POLICY_FIELDS) if (v[f]) body[f] = v[f];
    if (v.allowedRecipients) body.allowedRecipients = v.allowedRecipients.split(',').map((s) => s.trim()).filter(Boolean);
    await withOwnerConsent((consent) => pcp.PUT('/api/v1/agents/{id}/policy', { params: { path }, body: consent ? { ...body, consent } : body }));
    await agentPage(id);
    say('Policy saved.', 'ok');
  });
  const keyButton = h('button', { id: 'create-agent-key', type: 'button', click: () => void attempt(async () => {
    const scopes = AGENT_KEY_SCOPES;
    const key = await withOwnerConsent((consent) => pcp.POST('/api/v1/agents/{id}/keys', { params: { path }, body: consent ? { scopes, consent } : { scopes } }));
    showSecret('New agent key', key.secret);
  }) }, 'Create agent key');
  const pause = h('button', { id: 'pause', type: 'button', click: () => void attempt(async () => {
    if (agent.paused) await withOwnerConsent((consent) => pcp.POST('/api/v1/agents/{id}/resume', { params: { path }, body: consent ? { consent } : {} }));
    else await pcp.POST('/api/v1/agents/{id}/pause', { params: { path } });
    await agentPage(id);
  }) }, agent.paused ? 'Resume' : 'Pause');
  content().replaceChildren(
    h('p', {}, h('strong', {}, agent.slug), ' · owner ', h('code', {}, agent.ownerAddress), ' · signer ', h('code', {}, text(signer.address)), ' ',
      h('span', { id: 'signer-status', class: 'status', 'data-enabled': String(signer.enabled) }, signer.enabled ? 'signer enabled' : 'signer disabled'), ' ',
      h('span', { id: 'paused', class: 'status' }, agent.paused ? 'paused' : 'active')),
    h('p', {}, 'Signer balance ', h('strong', { id: 'signer-balance' }, balance?.onChainBalance ?? '—'), ' USDC · owner ', h('span', { id: 'owner-balance' }, balance?.ownerBalance ?? '—'), ' USDC'),
    h('p', { id: 'usage' }, `Used today ${agent.usage.usedToday} · this month ${agent.usage.usedThisMonth} USDC`),
    h('p', {}, pause, keyButton),
    policyForm,
    h('h2', {}, 'Payments'),
    table(payments.data, [['Id', (r) => r.id], ['Status', (r) => r.status], ['To', (r) => r.to], ['Amount', (r) => r.amount], ['Tx', (r) => text(r.txHash)], ['Created', (r) => r.createdAt]], 'payments'),
    h('h2', {}, 'Mandates'),
    table(mandates.data, [['Id', (r) => r.id], ['Status', (r) => h('span', { class: 'mandate-status' }, r.status)], ['Used', (r) => r.usedAmount], ['Total', (r) => r.totalAmount], ['', (r) => (r.status === 'revoked' ? '' : h('button', { class: 'revoke-mandate danger', type: 'button', click: () => void attempt(async () => {
      // The owner's EIP-712 RevokeMandate, posted to the public owner-signed route (docs/architecture.md §14).
      if (!ownerWallet) throw new Error('Connect the owner wallet first.');
      if (!confirm(`Revoke mandate ${r.id}? It stops covering payments at once.`)) return;
      const nonce = randomNonce();
      const deadline = Math.floor(Date.now() / 1000) + 600;
      say('Confirm in your wallet.');
      const signature = await ownerWallet.signTypedData({ domain: ownerDomain(chainId), types: REVOKE_MANDATE_TYPES, primaryType: 'RevokeMandate', message: { mandateId: r.id, nonce, deadline: String(deadline) } });
      await pcp.POST('/api/v1/mandates/{id}/revoke', { params: { path: { id: r.id } }, body: { nonce, deadline, signature } });
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
function ownerActions(id: string, agent: Schemas['AgentDto'], wallet: Wallet): void {
  const signer = agent.signer;
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
    await sendUsdcTransfer(wallet, data.usdc, signer.address, units);
    await agentPage(id);
    say(`Topped up: the signer holds ${document.getElementById('signer-balance')?.textContent ?? '?'} USDC.`, 'ok');
  });
  const withdraw = amountForm('withdraw', 'Withdraw', async (units, amount) => {
    const nonce = randomNonce();
    const deadline = Math.floor(Date.now() / 1000) + 600;
    say('Confirm in your wallet.');
    const signature = await wallet.signTypedData({ domain: ownerDomain(chainId), types: WITHDRAW_TYPES, primaryType: 'Withdraw', message: { agentId: id, amount: units.toString(), nonce, deadline: String(deadline) } });
    const res = await pcp.POST('/api/v1/agents/{id}/withdraw', { params: { path: { id } }, body: { amount, nonce, deadline, signature } });
    await agentPage(id);
    say(`Withdrew ${res.amount} USDC to the owner (${res.txHash}).`, 'ok');
  });
  {
    const actions = document.getElementById('actions')!;
    actions.replaceChildren(topUp, withdraw, h('button', { id: 'toggle-signer', class: 'primary', type: 'button', click: () => void attempt(async () => {
      const want = !signer.enabled;
      const nonce = randomNonce();
      const deadline = Math.floor(Date.now() / 1000) + 600;
      say('Confirm in your wallet.');
      const signature = await wallet.signTypedData({ domain: ownerDomain(chainId), types: ENABLE_SIGNER_TYPES, primaryType: 'EnableSigner', message: { agentId: id, signer: signer.address, enabled: want, nonce, deadline: String(deadline) } });
      await pcp.POST('/api/v1/agents/{id}/signer', { params: { path: { id } }, body: { enabled: want, nonce, deadline, signature } });
      await agentPage(id);
      say(want ? 'Session signer enabled.' : 'Session signer disabled.', 'ok');
    }) }, signer.enabled ? 'Disable the session signer' : 'Enable the session signer'));
  }
}

