/**
 * The escrow templates a checkout session (and the offering that sells it) is made from
 * (SPEC "Checkout sessions", docs/architecture.md §7). They live in the offerings module, the
 * lowest domain that names them; checkout re-exports them with its inspection windows.
 */
export const ESCROW_TEMPLATES = ['freelance', 'physical', 'digital', 'custom'] as const;
/** One of {@link ESCROW_TEMPLATES}. */
export type EscrowTemplateId = (typeof ESCROW_TEMPLATES)[number];
