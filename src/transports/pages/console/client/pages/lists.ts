/** The list sections and their detail pages: chain-event timeline, the seller's escrow actions, the refund panel. */
import { encodeFunctionData, parseAbi } from 'viem';
import type { components } from '../../../../../../packages/sdk/src/generated/openapi';
import { ESCROW_ACTIONS, type EscrowApiAction } from '../../../../../modules/escrow/escrow-actions';
import { setupConnect } from '../../../pay/client/connect';
import { say } from '../../../pay/client/ui';
import type { Wallet } from '../../../pay/client/wallet';
import { call } from '../api';
import { attempt, content, data, h, orgBase, type Row, table, text } from '../dom';
import { refundPanel } from '../refund';
import { sendTransaction } from '../wallet-tx';

/** The chain the page's wallet must be on (`data-chain-id`). */
const chainId = Number(data.chainId);

type Schemas = components['schemas'];
type Column<T> = [string, (r: T) => Node | string];
/** A list section: its API path and its columns, typed by the SDK's schema of its items. */
type ListSpec<T> = { path: string; columns: Array<Column<T>> };
const spec = <T,>(path: string, columns: Array<Column<T>>): ListSpec<Row> => ({ path, columns: columns as unknown as Array<Column<Row>> });

const LISTS: Record<string, ListSpec<Row>> = {
  checkouts: spec<Schemas['CheckoutSessionDto']>('/api/v1/checkout-sessions', [['Status', (r) => r.status], ['Amount', (r) => r.amount], ['Description', (r) => text(r.description)], ['Created', (r) => r.createdAt]]),
  escrows: spec<Schemas['EscrowDto']>('/api/v1/escrows', [['Status', (r) => r.status], ['Amount', (r) => r.amount], ['Buyer', (r) => text(r.buyer.address)], ['Created', (r) => r.createdAt]]),
  invoices: spec<Schemas['InvoiceDto']>('/api/v1/invoices', [['Status', (r) => r.status], ['Amount', (r) => r.amount], ['Created', (r) => r.createdAt]]),
  offerings: spec<Schemas['OfferingDto']>('/api/v1/offerings', [['Name', (r) => r.name], ['Price', (r) => r.amount], ['Created', (r) => r.createdAt]]),
};

/** CheckoutEscrow's seller functions (libs/contracts/CheckoutEscrow.sol): the payout wallet calls them itself. */
const SELLER_ABI = parseAbi(['function accept(bytes32 escrowId)', 'function markDelivered(bytes32 escrowId)', 'function decline(bytes32 escrowId)']);

/** The seller's actions with their contract function and message (which statuses allow each is the API's own table, ESCROW_ACTIONS). */
const SELLER_ACTIONS = [
  { action: 'accept', fn: 'accept', label: 'Accept', done: 'Escrow accepted.' },
  { action: 'mark-delivered', fn: 'markDelivered', label: 'Mark delivered', done: 'Marked delivered: the inspection window runs.' },
  { action: 'decline', fn: 'decline', label: 'Decline and refund', done: 'Declined: the buyer is refunded.' },
] as const satisfies ReadonlyArray<{ action: EscrowApiAction; fn: string; label: string; done: string }>;

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
  return SELLER_ACTIONS.filter((a) => (ESCROW_ACTIONS[a.action].from as readonly string[]).includes(text(escrow.status))).map((a) =>
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

/** A list section (checkouts, escrows, invoices, offerings) a page of 20 at a time, or one item with its chain events and actions. */
export async function listPage(section: string, after?: string): Promise<void> {
  const list = LISTS[section];
  if (data.item) {
    const item = await call<Row>('GET', `${list.path}/${data.item}`);
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
  const page = await call<{ data: Row[]; hasMore: boolean }>('GET', `${list.path}?limit=20${after ? `&starting_after=${encodeURIComponent(after)}` : ''}`);
  const more = page.hasMore;
  content().replaceChildren(
    table(page.data, [['Id', (r) => h('a', { href: `${orgBase()}/${section}/${text(r.id)}` }, text(r.id))], ...list.columns], section),
    more ? h('button', { id: 'next', type: 'button', click: () => void attempt(() => listPage(section, String(page.data[page.data.length - 1].id))) }, 'Next page') : '',
  );
}

