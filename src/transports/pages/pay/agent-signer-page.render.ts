import type { AgentView } from '../../../modules/agents/agents.service';
import { escapeHtml as escape, MESSAGE_REGION, renderShell } from './page-shell';

const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/**
 * The agent owner's page `{checkout_host}/agents/{id}/signer` (docs/architecture.md §13, §16): the
 * agent, its owner wallet and session signer, and a button the bundled script turns into an
 * owner-signed EIP-712 EnableSigner{agentId, signer, enabled, nonce, deadline} posted to
 * `POST /api/v1/agents/{id}/signer` (disabling sweeps the float back to the owner). Every value is
 * HTML-escaped; the script reads the message fields from `data-*` attributes.
 */
export function renderAgentSignerPage(opts: { agent: AgentView; chainId: number }): string {
  const { agent } = opts;
  const enabled = agent.signer.enabled;
  const main = `<p class="merchant">Agent owner</p>
<h1>${escape(agent.name ?? agent.slug)}</h1>
<p><span class="status" id="status" data-enabled="${enabled}" data-tone="${enabled ? 'ok' : 'warn'}">${enabled ? 'Session signer enabled' : 'Session signer disabled'}</span></p>
<table>
<tr><th scope="row">Agent</th><td><code>${escape(agent.slug)}</code></td></tr>
<tr><th scope="row">Owner wallet</th><td><code id="owner">${escape(agent.ownerAddress)}</code></td></tr>
<tr><th scope="row">Session signer</th><td><code>${escape(agent.signer.address ?? 'not created yet')}</code></td></tr>
</table>
<p>${enabled ? 'Disabling stops the agent from paying and sweeps the float in its session signer back to the owner wallet.' : 'Enabling lets the agent pay from its session signer, within its policy.'}
Only the owner wallet can sign this.</p>
<section class="panel" id="wallet" aria-labelledby="wallet-title" hidden>
<h2 id="wallet-title">Owner wallet</h2>
<p id="account" class="muted">Not connected.</p>
<div id="providers"></div>
<button type="button" class="primary" id="connect">Connect wallet</button>
<div id="actions"></div>
</section>
${MESSAGE_REGION}`;
  return renderShell({
    title: `${agent.name ?? agent.slug}: session signer`,
    script: true,
    main,
    mainAttrs: {
      page: 'agent-signer',
      'agent-id': agent.id,
      owner: agent.ownerAddress,
      signer: agent.signer.address ?? ZERO_ADDRESS,
      enabled: String(enabled),
      'chain-id': String(opts.chainId),
    },
  });
}
