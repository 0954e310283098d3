import { formatAmount } from './usdc';

export const FEE_SOURCES = ['checkout', 'invoice', 'escrow', 'p2p'] as const;
export type FeeSource = (typeof FEE_SOURCES)[number];

/** FeeQuote as docs/api.md "FeeQuote" renders it: amounts are decimal text, bps an integer. */
export interface FeeQuote {
  source: FeeSource;
  grossAmount: string;
  feeAmount: string;
  netAmount: string;
  bps: number;
  currency: 'USDC';
}

/** Fee schedule in basis points per source. docs/api.md "What the service does" 5: users pay 0 %. */
export const FEE_SCHEDULE_BPS: Readonly<Record<FeeSource, number>> = {
  checkout: 0,
  invoice: 0,
  escrow: 0,
  p2p: 0,
};

/**
 * Quotes the fee on a gross amount in base units. The fee rounds down to whole base units, so the
 * payer is never charged a fraction of a unit (docs/architecture.md §6: one fee service for every source).
 */
export function quoteFee(source: FeeSource, grossUnits: bigint, schedule = FEE_SCHEDULE_BPS): FeeQuote {
  const bps = schedule[source];
  const feeUnits = (grossUnits * BigInt(bps)) / 10_000n;
  return {
    source,
    grossAmount: formatAmount(grossUnits),
    feeAmount: formatAmount(feeUnits),
    netAmount: formatAmount(grossUnits - feeUnits),
    bps,
    currency: 'USDC',
  };
}
