/**
 * The console's Refund button on a released checkout (DESIGN §21, issue 32; docs/api.md "Refunds"):
 * the seller enters the amount, the page creates the refund (`POST /api/v1/checkout-sessions/{id}/refunds`),
 * then the receiving wallet (the refund's `from`: the escrow's seller, not today's payout address)
 * signs its EIP-3009 TransferWithAuthorization typed data, which the page submits
 * (`POST /api/v1/refunds/{id}/submit {signature}`; the relayer sends it gaslessly). When the
 * signed-in owner is not that wallet, the page says which wallet must sign and shows the typed data
 * (to sign elsewhere and submit through the API). Text is written as text nodes only.
 */
import type { Wallet } from '../../pay/client/wallet';
import { pcp, type Schemas } from './api';

/** What the panel needs from the console page (pages/lists.ts): the connected wallet, the signed-in address and the live region. */
export interface RefundPanelDeps {
  /** Runs `work`, reporting its error in the live region. */
  attempt(work: () => Promise<void>): Promise<void>;
  say(text: string, tone?: 'ok' | 'bad' | ''): void;
  /** The wallet connected on the page (null until the person connects one). */
  wallet(): Wallet | null;
  /** The console session's address (the signed-in owner). */
  signedIn: string | undefined;
  /** Re-renders the checkout page after a refund. */
  refresh(): Promise<void>;
}

function el(tag: string, attrs: Record<string, string> = {}, ...children: Array<Node | string>): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

/**
 * The Refund panel of `checkout` (a `GET /api/v1/checkout-sessions/{id}` body), or null when it is
 * not `released` (only money received can be refunded). One Idempotency-Key per click of Refund,
 * reused when the same amount is sent again after an error, so a retry never creates a second refund.
 */
export function refundPanel(checkout: Schemas['CheckoutSessionDto'], deps: RefundPanelDeps): HTMLElement | null {
  if (checkout.status !== 'released') return null;
  const amount = el('input', { id: 'refund-amount', name: 'refundAmount', inputmode: 'decimal', required: '', placeholder: '5.00' }) as HTMLInputElement;
  const result = el('div', { id: 'refund-result' });
  let pending: { amount: string; key: string } | null = null;
  const button = el('button', { id: 'refund', class: 'danger', type: 'button' }, 'Refund');
  button.addEventListener('click', () =>
    void deps.attempt(async () => {
      const value = amount.value.trim();
      if (!value) throw new Error('Enter the amount to refund.');
      if (!pending || pending.amount !== value) pending = { amount: value, key: crypto.randomUUID() };
      const refund = await pcp.POST('/api/v1/checkout-sessions/{checkoutSessionId}/refunds', { params: { path: { checkoutSessionId: checkout.id }, header: { 'Idempotency-Key': pending.key } }, body: { amount: value } });
      pending = null;
      const from = refund.from;
      // USDC's TransferWithAuthorization as the API gives it (EIP-712 `types` are opaque JSON to the schema; viem validates them before signing).
      const typed = refund.typedData as Parameters<Wallet['signTypedData']>[0] | null | undefined;
      if (!typed) throw new Error(`Refund ${refund.id} is ${refund.status}: there is nothing to sign.`);
      const wallet = deps.wallet();
      if (!deps.signedIn || deps.signedIn.toLowerCase() !== from.toLowerCase() || !wallet || wallet.account.toLowerCase() !== from.toLowerCase()) {
        result.replaceChildren(
          el('p', { id: 'refund-signer' }, `Refund ${refund.id} of ${refund.amount} USDC is created. The wallet `, el('code', { id: 'refund-from' }, from), ' must sign it (EIP-712 TransferWithAuthorization below), then submit the signature to ', el('code', {}, `POST /api/v1/refunds/${refund.id}/submit`), '.'),
          el('pre', { id: 'refund-typed-data' }, JSON.stringify(typed, null, 2)),
        );
        deps.say(`The receiving wallet ${from} must sign this refund${wallet ? ` (connected: ${wallet.account})` : ''}.`, 'bad');
        return;
      }
      deps.say(`Sign the refund of ${refund.amount} USDC in your wallet.`);
      const signature = await wallet.signTypedData(typed, from);
      const submitted = await pcp.POST('/api/v1/refunds/{id}/submit', { params: { path: { id: refund.id }, header: { 'Idempotency-Key': `console-refund-submit-${refund.id}` } }, body: { signature } });
      await deps.refresh();
      deps.say(`Refund ${submitted.id} of ${submitted.amount} USDC is ${submitted.status}.`, submitted.status === 'failed' ? 'bad' : 'ok');
    }),
  );
  return el(
    'div',
    { id: 'refund-panel', class: 'panel' },
    el('h2', {}, 'Refund'),
    el('p', { class: 'muted' }, `Refunded so far: ${checkout.refundedAmount} of ${checkout.amount} USDC. Signed by the wallet that received the money, sent gaslessly.`),
    el('label', {}, 'Refund amount (USDC) ', amount),
    button,
    result,
  );
}
