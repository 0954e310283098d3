import fc from 'fast-check';
import { AMOUNT_PATTERN, AmountFormatError, formatAmount, parseAmount } from './usdc';

/**
 * Properties of the money parser (docs/architecture.md §6), checked with fast-check over
 * generated inputs rather than examples: base units round-trip through text, the parser agrees
 * with an independent oracle, and no input makes it throw anything but AmountFormatError.
 */
describe('USDC amount properties', () => {
  const units = fc.bigInt({ min: 1n, max: 10n ** 30n });

  it('formatAmount then parseAmount gives back the same base units', () => {
    fc.assert(fc.property(units, (u) => parseAmount(formatAmount(u)) === u), { numRuns: 2000 });
  });

  it('formatAmount always renders canonical text with at least two decimals', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 30n }), (u) => {
        const text = formatAmount(u);
        return AMOUNT_PATTERN.test(text) && /\.\d{2,6}$/.test(text);
      }),
      { numRuns: 2000 },
    );
  });

  it('parseAmount agrees with an oracle built from the digits (whole × 10^6 + fraction padded to 6)', () => {
    const amountText = fc
      .tuple(fc.bigInt({ min: 0n, max: 10n ** 18n }), fc.option(fc.stringMatching(/^\d{1,6}$/), { nil: undefined }))
      .map(([whole, fraction]) => (fraction === undefined ? `${whole}` : `${whole}.${fraction}`));
    fc.assert(
      fc.property(amountText, (text) => {
        const [w, f = ''] = text.split('.');
        const expected = BigInt(w) * 1_000_000n + BigInt((f + '000000').slice(0, 6));
        if (expected === 0n) return throwsReason(() => parseAmount(text), 'not_positive');
        return parseAmount(text) === expected;
      }),
      { numRuns: 3000 },
    );
  });

  it('any other input is refused with AmountFormatError, never another error or a value', () => {
    const junk = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.double().map(String),
      fc.constantFrom('1e5', '-1', '01.5', '1.0000001', '.5', '1.', ' 1', '1\u0000', '１２', '0x1F', 'Infinity', 'NaN'),
      fc.anything(),
    );
    fc.assert(
      fc.property(junk, (input) => {
        if (typeof input === 'string' && AMOUNT_PATTERN.test(input)) return true; // valid text: covered above
        try {
          parseAmount(input);
          return false;
        } catch (err) {
          return err instanceof AmountFormatError;
        }
      }),
      { numRuns: 5000 },
    );
  });

  it('the maximum is inclusive: max passes, max + 1 base unit is too_large', () => {
    fc.assert(
      fc.property(units, (max) => parseAmount(formatAmount(max), max) === max && throwsReason(() => parseAmount(formatAmount(max + 1n), max), 'too_large')),
      { numRuns: 1000 },
    );
  });
});

function throwsReason(f: () => unknown, reason: AmountFormatError['reason']): boolean {
  try {
    f();
    return false;
  } catch (err) {
    return err instanceof AmountFormatError && err.reason === reason;
  }
}
