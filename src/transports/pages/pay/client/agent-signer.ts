import { ENABLE_SIGNER_TYPES, ownerDomain } from '../../../../modules/agents/owner-messages';
import { api, ApiError } from './api';
import { setupConnect } from './connect';
import { button, byId, busy, say, shortAddress } from './ui';
import { Wallet, WalletError } from './wallet';

const REASONS: Record<string, string> = {
  bad_signature: 'The signature is not from the owner wallet of this agent. Connect the owner wallet and try again.',
  expired: 'The signature expired before it arrived. Try again.',
  nonce_used: 'This signature was already used. Try again.',
};

/** 32 random bytes as 0x hex (the single-use EnableSigner nonce). */
function randomNonce(): `0x${string}` {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `0x${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * The agent owner's signer page (`/agents/{id}/signer`, docs/architecture.md §13, §16): the owner
 * connects the owner wallet, signs EIP-712 EnableSigner{agentId, signer, enabled, nonce, deadline}
 * (deadline 10 minutes ahead) and the page posts it to `POST /api/v1/agents/{id}/signer`.
 */
export function startAgentSignerPage(root: HTMLElement): void {
  const agentId = root.dataset.agentId!;
  const owner = root.dataset.owner!;
  const chainId = Number(root.dataset.chainId);
  let enabled = root.dataset.enabled === 'true';
  const panel = byId('wallet');
  const actions = byId('actions');
  panel.hidden = false;

  const render = (wallet: Wallet) => {
    if (wallet.account.toLowerCase() !== owner.toLowerCase()) {
      actions.replaceChildren();
      say(`This wallet (${shortAddress(wallet.account)}) is not the owner of this agent. Connect the owner wallet ${shortAddress(owner)}.`, 'bad');
      return;
    }
    actions.replaceChildren(
      button(enabled ? 'Disable the session signer' : 'Enable the session signer', () => void busy(panel, () => toggle(wallet)), { id: 'toggle-signer', kind: enabled ? 'danger' : 'primary' }),
    );
  };

  const toggle = async (wallet: Wallet) => {
    const want = !enabled;
    const nonce = randomNonce();
    const deadline = Math.floor(Date.now() / 1000) + 600;
    try {
      say('Confirm in your wallet.');
      const signature = await wallet.signTypedData({
        domain: ownerDomain(chainId),
        types: ENABLE_SIGNER_TYPES,
        primaryType: 'EnableSigner',
        message: { agentId, signer: root.dataset.signer!, enabled: want, nonce, deadline: String(deadline) },
      });
      say('Sending…');
      const res = await api<{ agent: { signer: { enabled: boolean } }; sweepTxHash: string | null }>(`/api/v1/agents/${agentId}/signer`, { enabled: want, nonce, deadline, signature });
      enabled = res.agent.signer.enabled;
      const status = byId('status');
      status.textContent = enabled ? 'Session signer enabled' : 'Session signer disabled';
      status.dataset.enabled = String(enabled);
      status.dataset.tone = enabled ? 'ok' : 'warn';
      say(enabled ? 'Session signer enabled. The agent can pay within its policy.' : `Session signer disabled.${res.sweepTxHash ? ' Its float is being swept back to the owner wallet.' : ''}`, 'ok');
      render(wallet);
    } catch (err) {
      if (err instanceof WalletError) say(err.message.replace('Nothing was paid or changed.', 'Nothing was changed.'), 'bad');
      else if (err instanceof ApiError) say(REASONS[err.reason ?? ''] ?? `${err.message} (${err.code})`, 'bad');
      else say(`Something went wrong: ${(err as Error).message}`, 'bad');
    }
  };

  setupConnect(() => chainId, render);
  root.dataset.ready = 'true';
}
