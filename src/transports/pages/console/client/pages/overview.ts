/** The organisation overview: verification, payout address and balances, the last 24 hours. */
import { pcp } from '../api';
import { content, h, orgBase, text } from '../dom';

/** Renders the overview; the payout balances (a chain read) are filled in after the page. */
export async function overviewPage(): Promise<void> {
  const [me, endpoint, deliveries, checkouts] = await Promise.all([
    pcp.GET('/api/v1/me'),
    pcp.GET('/api/v1/webhook-endpoints').catch(() => null),
    pcp.GET('/api/v1/webhook-deliveries', { params: { query: { limit: 100 } } }).catch(() => ({ data: [] })),
    pcp.GET('/api/v1/checkout-sessions', { params: { query: { limit: 100 } } }).catch(() => ({ data: [] })),
  ]);
  const since = Date.now() - 24 * 3600_000;
  const recent = (rows: Array<{ createdAt: string }>) => rows.filter((r) => Date.parse(r.createdAt) >= since);
  const failed = deliveries.data.filter((d) => d.status === 'failed' || d.status === 'retrying');
  const status = String(me.verification.status);
  const next = status === 'verified' ? 'Nothing to do.' : status === 'pending' ? 'Finish the identity step.' : 'Start verification.';
  content().replaceChildren(
    ...(failed.length ? [h('p', { id: 'webhook-warning', class: 'status', 'data-tone': 'bad' }, `${failed.length} webhook deliveries failing — see Webhooks.`)] : []),
    h('div', { class: 'panel' }, h('h2', {}, 'Verification'), h('p', {}, h('span', { id: 'kyb-status', class: 'status' }, status), ' ', next, ' ', h('a', { href: `${orgBase()}/verification` }, 'Verification'))),
    h('div', { class: 'panel' }, h('h2', {}, 'Payout'), h('p', {}, h('code', { id: 'payout-address' }, text(me.organization.payoutAddress))),
      h('p', {}, h('strong', { id: 'payout-usdc' }, '…'), ' USDC · ', h('strong', { id: 'payout-eth' }, '…'), ' ETH ', h('span', { id: 'payout-block', class: 'muted' }))),
    h('div', { class: 'panel' }, h('h2', {}, 'Last 24 hours'), h('p', { id: 'counts' }, `${recent(checkouts.data).length} checkouts · ${recent(deliveries.data).length} webhook deliveries`)),
    h('p', { class: 'muted' }, endpoint ? `Webhook endpoint: ${text(endpoint.url)}` : 'No webhook endpoint yet.'),
  );
  // Balances come from the chain (bounded by RPC_TIMEOUT_MS server-side): filled in after the page,
  // "unavailable" when the node does not answer, so a slow node never holds the overview.
  const fill = (usdc: string, eth: string, block: string) => {
    document.getElementById('payout-usdc')!.textContent = usdc;
    document.getElementById('payout-eth')!.textContent = eth;
    document.getElementById('payout-block')!.textContent = block;
  };
  await pcp.GET('/api/v1/payout-balance').then(
    (b) => fill(text(b.usdc), text(b.eth), b.blockNumber === null ? '' : `(block ${text(b.blockNumber)})`),
    () => fill('unavailable', 'unavailable', ''),
  );
}
