/** The list sections and their detail pages: chain-event timeline, the seller's escrow actions, the refund panel. */
import { encodeFunctionData, parseAbi } from 'viem';
import { ESCROW_ACTIONS, type EscrowApiAction } from '../../../../../modules/escrow/escrow-actions';
import { setupConnect } from '../../../pay/client/connect';
import { say } from '../../../pay/client/ui';
import type { Wallet } from '../../../pay/client/wallet';
import { pcp, type Schemas } from '../api';
import { attempt, type Column, content, data, fieldsTable, h, orgBase, table, text } from '../dom';
import { refundPanel } from '../refund';
import { sendTransaction } from '../wallet-tx';

/** The chain the page's wallet must be on (`data-chain-id`). */
const chainId = Number(data.chainId);

type Escrow = Schemas['EscrowDto'];

/**
 * A list section: its page of items and one item (the SDK's typed reads of its routes), its
 * columns, and the escrow whose chain events an item's page shows.
 */
interface Section<T extends { id: string }> {
  list(after?: string): Promise<{ data: T[]; hasMore: boolean }>;
  get(id: string): Promise<T>;
  columns: Array<Column<T>>;
  escrow(item: T): Promise<Escrow | null>;
  /** The panel above an item's fields (the checkout's Refund panel), if any. */
  panel?(item: T, section: string): HTMLElement | null;
}

/** A section's two pages (the list, a page of 20 at a time, and one item), its types checked once here. */
interface SectionPages {
  list(section: string, after?: string): Promise<void>;
  item(section: string, id: string): Promise<void>;
}

const page = (after?: string) => ({ query: { limit: 20, starting_after: after } });
const byId = (id: string) => ({ path: { id } });
const noEscrow = async () => null;

const LISTS: Record<string, SectionPages> = {
  checkouts: sectionPages<Schemas['CheckoutSessionDto']>({
    list: (after) => pcp.GET('/api/v1/checkout-sessions', { params: page(after) }),
    get: (id) => pcp.GET('/api/v1/checkout-sessions/{id}', { params: byId(id) }),
    columns: [['Status', (r) => r.status], ['Amount', (r) => r.amount], ['Description', (r) => r.description], ['Created', (r) => r.createdAt]],
    // The chain-event timeline is the escrow's `transactions`: a checkout shows the one its funding created, once funded.
    escrow: (r) => (r.escrowId ? pcp.GET('/api/v1/escrows/{id}', { params: byId(r.escrowId) }) : noEscrow()),
    panel: (r, section) => refundPanel(r, { attempt, say, wallet: () => actionWallet, signedIn: data.address, refresh: () => listPage(section) }),
  }),
  escrows: sectionPages<Escrow>({
    list: (after) => pcp.GET('/api/v1/escrows', { params: page(after) }),
    get: (id) => pcp.GET('/api/v1/escrows/{id}', { params: byId(id) }),
    columns: [['Status', (r) => r.status], ['Amount', (r) => r.amount], ['Buyer', (r) => r.buyer.address], ['Created', (r) => r.createdAt]],
    escrow: async (r) => r,
  }),
  invoices: sectionPages<Schemas['InvoiceDto']>({
    list: (after) => pcp.GET('/api/v1/invoices', { params: page(after) }),
    get: (id) => pcp.GET('/api/v1/invoices/{id}', { params: byId(id) }),
    columns: [['Status', (r) => r.status], ['Amount', (r) => r.amount], ['Created', (r) => r.createdAt]],
    escrow: noEscrow,
  }),
  offerings: sectionPages<Schemas['OfferingDto']>({
    list: (after) => pcp.GET('/api/v1/offerings', { params: page(after) }),
    get: (id) => pcp.GET('/api/v1/offerings/{id}', { params: byId(id) }),
    columns: [['Name', (r) => r.name], ['Price', (r) => r.amount], ['Created', (r) => r.createdAt]],
    escrow: noEscrow,
  }),
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
function sellerActions(escrow: Escrow): HTMLElement[] {
  if (escrow.role !== 'seller' && escrow.role !== 'buyer_and_seller') return [];
  const seller = escrow.seller.address;
  const chain = escrow.chain;
  return SELLER_ACTIONS.filter((a) => (ESCROW_ACTIONS[a.action].from as readonly string[]).includes(escrow.status)).map((a) =>
    h('button', { id: `escrow-${a.action}`, class: a.action === 'decline' ? 'danger' : 'primary', type: 'button', click: () => void attempt(async () => {
      if (!actionWallet) throw new Error('Connect the payout wallet first.');
      if (actionWallet.account.toLowerCase() !== seller.toLowerCase()) throw new Error(`Only the seller's payout wallet ${seller} can ${a.label.toLowerCase()}; connected: ${actionWallet.account}.`);
      if (a.action === 'decline' && !confirm('Decline this escrow? The buyer is refunded in full.')) return;
      say('Confirm the transaction in your wallet.');
      const txHash = await sendTransaction(actionWallet, chain.contract, encodeFunctionData({ abi: SELLER_ABI, functionName: a.fn, args: [chain.escrowKey as `0x${string}`] }), `${a.label.toLowerCase()} transaction`);
      await pcp.POST(`/api/v1/escrows/{id}/${a.action}`, { params: { path: { id: escrow.id }, header: { 'Idempotency-Key': `console-${a.action}-${txHash}` } }, body: { txHash } });
      await listPage(data.page!);
      say(a.done, 'ok');
    }) }, a.label),
  );
}

/** A list section (checkouts, escrows, invoices, offerings) a page of 20 at a time, or one item with its chain events and actions. */
export async function listPage(section: string, after?: string): Promise<void> {
  const pages = LISTS[section];
  return data.item ? pages.item(section, data.item) : pages.list(section, after);
}

/** The list and item pages of one section, typed by the SDK's schema of its items. */
function sectionPages<T extends { id: string }>(spec: Section<T>): SectionPages {
  return {
    async list(section, after) {
      const list = await spec.list(after);
      content().replaceChildren(
        table(list.data, [['Id', (r) => h('a', { href: `${orgBase()}/${section}/${r.id}` }, r.id)], ...spec.columns], section),
        list.hasMore ? h('button', { id: 'next', type: 'button', click: () => void attempt(() => listPage(section, list.data[list.data.length - 1].id)) }, 'Next page') : '',
      );
    },
    async item(section, id) {
      const item = await spec.get(id);
      const escrow = await spec.escrow(item);
      const events = (escrow?.transactions ?? []).slice().sort((a, b) => a.blockNumber - b.blockNumber);
      const actions = escrow ? sellerActions(escrow) : [];
      const panel = spec.panel?.(item, section) ?? null;
      content().replaceChildren(
        ...(panel ? [panel] : []),
        ...(escrow && actions.length ? [h('div', { id: 'seller-actions', class: 'panel' }, h('h2', {}, 'Seller actions'), h('p', { class: 'muted' }, 'Signed and sent by the payout wallet ', h('code', {}, escrow.seller.address), ', then reported to the API.'), ...actions)] : []),
        fieldsTable(item, 'detail', ['transactions']),
        h('h2', {}, 'Chain events'),
        escrow && section !== 'escrows' ? h('p', {}, 'Escrow ', h('a', { href: `${orgBase()}/escrows/${escrow.id}` }, escrow.id), ' · ', h('span', { id: 'escrow-status', class: 'status' }, escrow.status)) : '',
        events.length
          ? table(events, [['Action', (r) => h('span', { class: 'chain-action' }, r.action)], ['Transaction', (r) => h('code', { class: 'chain-tx' }, r.txHash)], ['Block', (r) => h('span', { class: 'chain-block' }, String(r.blockNumber))], ['From', (r) => text(r.from)], ['Recorded', (r) => r.recordedAt]], 'timeline')
          : h('p', { id: 'timeline-empty', class: 'muted' }, 'No chain event yet.'),
      );
      const wallet = document.getElementById('wallet');
      if (wallet && (actions.length || panel)) {
        wallet.hidden = false;
        if (!actionWallet) setupConnect(() => chainId, (w) => {
          actionWallet = w;
        });
      }
    },
  };
}
