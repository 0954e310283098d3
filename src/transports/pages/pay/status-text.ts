/**
 * Buyer-facing words for each checkout status (docs/architecture.md §7), shared by the server render
 * and the bundled page script; `tone` colours the status chip.
 */
export const STATUS_TEXT: Record<string, string> = {
  open: 'Awaiting payment',
  funded: 'Paid into escrow',
  accepted: 'Accepted by the seller',
  delivered: 'Delivered, in inspection',
  released: 'Completed: funds released to the seller',
  disputed: 'In dispute',
  refunded: 'Refunded to the buyer',
  cancelled: 'Cancelled and refunded',
  expired: 'Expired',
};

/** Chip tone per status: ok (money safe in escrow or done), warn (needs attention), bad (closed). */
export const STATUS_TONE: Record<string, string> = {
  funded: 'ok',
  accepted: 'ok',
  delivered: 'ok',
  released: 'ok',
  disputed: 'warn',
  refunded: 'warn',
  cancelled: 'bad',
  expired: 'bad',
};
