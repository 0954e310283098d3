import { STATUS_TEXT, STATUS_TONE } from '../status-text';
import { api, ApiError } from './api';
import { setupConnect } from './connect';
import { busy, button, byId, delay, say, shortAddress } from './ui';
import { Wallet, WalletError } from './wallet';

/** `GET /checkout/{id}/state` (the checkout host's JSON API, docs/architecture.md §16). */
interface CheckoutState {
  id: string;
  status: string;
  amount: string;
  currency: string;
  amountDecimal: string;
  merchant: { name: string; handle: string | null };
  description: string;
  expiresAt: string;
  redirectUrl: string | null;
  escrow: null | { escrowId: string; status: string; buyer: string | null; fundedAt: string | null; deliveredAt: string | null; inspectionEndsAt: string | null };
  allowedActions: Array<'pay' | 'release' | 'dispute' | 'cancel'>;
  chainId: number;
  usdcAddress: string;
  escrowAddress: string;
}

type TypedData = Parameters<Wallet['signTypedData']>[0];
type Action = 'release' | 'dispute' | 'cancel';

const CLOSED = new Set(['released', 'refunded', 'cancelled', 'expired']);
const REDIRECT_SECONDS = 4;

/** Buyer words for the relay's refusals (`details.reason`, POST /checkout/{id}/relay). */
function explain(err: unknown, amount: string): string {
  if (err instanceof WalletError) return err.message;
  if (err instanceof ApiError) {
    const reason = err.reason;
    if (reason === 'insufficient_balance') return `Your wallet does not hold enough USDC to pay ${amount} USDC. Add USDC to it or use another wallet. Nothing was paid.`;
    if (reason === 'expired' || err.details.status === 'expired') return 'This checkout has expired. Nothing was paid; ask the merchant for a new link.';
    if (reason === 'bad_signature') return 'The signature did not match this payment. Try again; nothing was paid.';
    if (reason === 'wrong_terms') return 'The payment terms changed. Reload the page and try again; nothing was paid.';
    if (reason === 'invalid_state') return `This checkout is ${STATUS_TEXT[String(err.details.status)]?.toLowerCase() ?? String(err.details.status)}; that cannot be done now.`;
    if (err.status === 429) return 'Too many attempts. Wait a minute and try again.';
    return `${err.message} (${err.code})`;
  }
  return `Something went wrong: ${(err as Error).message}. Nothing was paid.`;
}

/** Countdown text: "23 h 59 min left", "4:59 left". */
function left(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min left`;
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')} left`;
}

/**
 * The pay page (`/checkout/{id}`, docs/architecture.md §16): keeps the status and expiry countdown
 * current from `/state`, connects a wallet, pays gaslessly (funding typed data → the wallet's
 * `eth_signTypedData_v4` → `POST /relay` → polls until funded → back to the merchant's redirectUrl
 * after a short confirmation), and offers the buyer's allowed actions, each signed as an EIP-712
 * EscrowAction and posted to `/actions`.
 */
export function startCheckoutPage(root: HTMLElement): void {
  const id = root.dataset.checkoutId!;
  let state: CheckoutState | null = null;
  let wallet: Wallet | null = null;
  let working = false;
  let redirectTimer: ReturnType<typeof setInterval> | null = null;
  let actionsKey = '';

  const statusEl = byId('status');
  const actionsEl = byId('actions');
  const panel = byId('wallet');

  const expired = () => state !== null && state.status === 'open' && Date.parse(state.expiresAt) <= Date.now();

  const renderStatus = () => {
    if (!state) return;
    const status = expired() ? 'expired' : state.status;
    statusEl.textContent = STATUS_TEXT[status] ?? status;
    statusEl.dataset.status = status;
    statusEl.dataset.tone = STATUS_TONE[status] ?? '';
    root.dataset.status = status;
    byId('expiry').hidden = status !== 'open';
    if (status === 'open') byId('countdown').textContent = ` · ${left(Date.parse(state.expiresAt) - Date.now())}`;
  };

  const renderActions = () => {
    if (!state) return;
    const status = expired() ? 'expired' : state.status;
    const allowed = status === 'expired' ? [] : state.allowedActions;
    panel.hidden = allowed.length === 0 && !wallet;
    const buyer = state.escrow?.buyer ?? null;
    const notBuyer = wallet && buyer && buyer.toLowerCase() !== wallet.account.toLowerCase();
    const key = JSON.stringify([status, allowed, wallet?.account ?? null, notBuyer]);
    if (key === actionsKey) return;
    actionsKey = key;
    byId('confirm').hidden = true;
    if (!wallet) {
      actionsEl.replaceChildren();
      return;
    }
    if (notBuyer) {
      actionsEl.replaceChildren(Object.assign(document.createElement('p'), { textContent: `This payment was made from ${shortAddress(buyer)}. Connect that wallet to manage it.` }));
      return;
    }
    const buttons: HTMLButtonElement[] = [];
    if (allowed.includes('pay')) buttons.push(button(`Pay ${state.amountDecimal} USDC`, () => void run(pay), { id: 'pay', kind: 'primary' }));
    if (allowed.includes('release'))
      buttons.push(button('Release payment to the seller', () => confirmThen('release', `Release ${state!.amountDecimal} USDC to ${state!.merchant.name}? The seller receives the money; this cannot be undone.`), { id: 'release', kind: 'primary' }));
    if (allowed.includes('cancel')) buttons.push(button('Cancel and get a refund', () => confirmThen('cancel', `Cancel this order? ${state!.amountDecimal} USDC returns to your wallet.`), { id: 'cancel' }));
    if (allowed.includes('dispute'))
      buttons.push(button('Open a dispute', () => confirmThen('dispute', 'Open a dispute? The payment stays locked in escrow until an arbiter decides.'), { id: 'dispute', kind: 'danger' }));
    actionsEl.replaceChildren(...buttons);
  };

  const refresh = async () => {
    state = await api<CheckoutState>(`/checkout/${id}/state`);
    renderStatus();
    renderActions();
  };

  const run = (work: () => Promise<void>) => {
    if (working) return Promise.resolve();
    working = true;
    return busy(panel, async () => {
      try {
        await work();
      } catch (err) {
        say(explain(err, state?.amountDecimal ?? ''), 'bad');
      } finally {
        working = false;
      }
    });
  };

  /** Polls /state until `done` holds (about a minute), keeping the page current. */
  const waitFor = async (done: (s: CheckoutState) => boolean): Promise<boolean> => {
    for (let i = 0; i < 60; i++) {
      await refresh();
      if (state && done(state)) return true;
      await delay(1000);
    }
    return false;
  };

  const pay = async () => {
    if (!wallet || !state) return;
    await wallet.ensureChain();
    say('Preparing the payment…');
    const funding = await api<{ typedData: TypedData }>(`/checkout/${id}/funding?buyer=${wallet.account}`);
    say('Confirm the payment in your wallet.');
    const signature = await wallet.signTypedData(funding.typedData);
    const m = funding.typedData.message;
    say('Sending your payment…');
    await api(`/checkout/${id}/relay`, { buyer: wallet.account, validAfter: m.validAfter, validBefore: m.validBefore, nonce: m.nonce, signature });
    say('Payment sent; waiting for the network to confirm it…');
    if (!(await waitFor((s) => s.status !== 'open'))) {
      say('Your payment was sent and is still being confirmed. This page updates on its own.');
      return;
    }
    say(`Payment received: ${state.amountDecimal} USDC is held in escrow for ${state.merchant.name}.`, 'ok');
    scheduleRedirect();
  };

  const scheduleRedirect = () => {
    const url = state?.redirectUrl;
    if (!url || !/^https?:\/\//i.test(url) || redirectTimer) return;
    let seconds = REDIRECT_SECONDS;
    const note = byId('message');
    const stay = button('Stay on this page', () => {
      if (redirectTimer) clearInterval(redirectTimer);
      redirectTimer = null;
      note.textContent = `Payment received: ${state!.amountDecimal} USDC is held in escrow.`;
      stay.remove();
    }, { id: 'stay' });
    const tick = () => {
      note.textContent = `Payment received: ${state!.amountDecimal} USDC is held in escrow. Returning to ${state!.merchant.name} in ${seconds} s…`;
      if (seconds-- <= 0) {
        if (redirectTimer) clearInterval(redirectTimer);
        window.location.assign(url);
      }
    };
    note.after(stay);
    tick();
    redirectTimer = setInterval(tick, 1000);
  };

  const act = async (action: Action) => {
    if (!wallet || !state) return;
    const before = state.status;
    say('Preparing…');
    const { typedData } = await api<{ typedData: TypedData }>(`/checkout/${id}/actions/${action}?actor=${wallet.account}`);
    say('Confirm in your wallet.');
    const signature = await wallet.signTypedData(typedData);
    say('Sending…');
    await api(`/checkout/${id}/actions`, { action, actor: wallet.account, nonce: typedData.message.nonce, deadline: typedData.message.deadline, signature });
    say('Sent; waiting for the network to confirm it…');
    const done = await waitFor((s) => s.status !== before);
    const words = { release: 'Payment released to the seller. Thank you!', cancel: state?.status === 'open' ? 'Cancelled and refunded to your wallet. This checkout can still be paid until it expires.' : 'Cancelled and refunded to your wallet.', dispute: 'Dispute opened. The payment stays in escrow until it is resolved.' };
    say(done ? words[action] : 'Sent and still being confirmed. This page updates on its own.', done ? 'ok' : '');
  };

  const confirmThen = (action: Action, text: string) => {
    const box = byId('confirm');
    byId('confirm-text').textContent = text;
    box.hidden = false;
    const yes = byId<HTMLButtonElement>('confirm-yes');
    const no = byId<HTMLButtonElement>('confirm-no');
    yes.textContent = { release: 'Yes, release', cancel: 'Yes, cancel', dispute: 'Yes, open a dispute' }[action];
    yes.onclick = () => {
      box.hidden = true;
      void run(() => act(action));
    };
    no.onclick = () => {
      box.hidden = true;
      byId<HTMLButtonElement>(action).focus();
    };
    yes.focus();
  };

  setupConnect(() => state?.chainId ?? 0, (w) => {
    wallet = w;
    actionsKey = '';
    renderActions();
    (actionsEl.querySelector('button') as HTMLButtonElement | null)?.focus();
  });

  // The wallet panel stays hidden until /state answered (it names the chain and the allowed actions).
  const boot = async () => {
    try {
      await refresh();
      root.dataset.ready = 'true';
    } catch (err) {
      say(err instanceof ApiError && err.status === 404 ? 'This checkout does not exist.' : 'Could not load this checkout. Check your connection and reload.', 'bad');
      return;
    }
    setInterval(() => {
      renderStatus();
      if (expired()) renderActions(); // the deadline passed while the page was open: nothing to pay any more
    }, 1000);
    // Keep up with the seller's steps (accept, delivery) and the chain while the page is open.
    setInterval(() => {
      if (!working && state && !CLOSED.has(state.status) && !expired() && document.visibilityState === 'visible') void refresh().catch(() => undefined);
    }, 4000);
  };
  void boot();
}
