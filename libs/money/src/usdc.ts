/** USDC has 6 decimals: 1 USDC = 1_000_000 base units (the token's `decimals()`). */
export const USDC_DECIMALS = 6;
const SCALE = 10n ** BigInt(USDC_DECIMALS);

/** Canonical decimal text accepted on the wire (docs/architecture.md §6): no sign, no exponent, no leading zeros, ≤ 6 decimals. */
export const AMOUNT_PATTERN = /^(0|[1-9]\d*)(\.\d{1,6})?$/;

/** Thrown by {@link parseAmount} when text is not a canonical USDC amount. */
export class AmountFormatError extends Error {
  constructor(readonly input: unknown, readonly reason: 'format' | 'not_positive' | 'too_large') {
    super(
      reason === 'format'
        ? 'must be a decimal string with at most 6 decimals, e.g. "12.50"'
        : reason === 'not_positive'
          ? 'must be greater than 0'
          : 'exceeds the maximum amount',
    );
  }
}

/**
 * Parses decimal text ("12.5") into USDC base units (12_500_000n). Never goes through a float.
 * @param max inclusive upper bound in base units, if any.
 * @throws AmountFormatError when the text is not canonical (docs/architecture.md §6), is zero, or exceeds max.
 */
export function parseAmount(text: unknown, max?: bigint): bigint {
  if (typeof text !== 'string' || !AMOUNT_PATTERN.test(text)) throw new AmountFormatError(text, 'format');
  const [whole, fraction = ''] = text.split('.');
  const units = BigInt(whole) * SCALE + BigInt(fraction.padEnd(USDC_DECIMALS, '0'));
  if (units <= 0n) throw new AmountFormatError(text, 'not_positive');
  if (max !== undefined && units > max) throw new AmountFormatError(text, 'too_large');
  return units;
}

/**
 * Renders base units as canonical decimal text with at least two decimals and no trailing zeros
 * beyond them: 12_500_000n → "12.50", 1n → "0.000001", 0n → "0.00" (docs/architecture.md §6).
 * @throws RangeError for negative amounts.
 */
export function formatAmount(units: bigint): string {
  if (units < 0n) throw new RangeError('amount must not be negative');
  const whole = units / SCALE;
  let fraction = (units % SCALE).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${whole}.${fraction}`;
}
