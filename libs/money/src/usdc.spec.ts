import { AmountFormatError, formatAmount, parseAmount } from './usdc';
import { quoteFee } from './fees';

describe('parseAmount', () => {
  it.each([
    ['1', 1_000_000n],
    ['12.5', 12_500_000n],
    ['0.000001', 1n],
    ['1000000', 1_000_000_000_000n],
    ['999999999999999999999.999999', 999_999_999_999_999_999_999_999_999n],
  ])('parses %s into base units', (text, units) => {
    expect(parseAmount(text)).toBe(units);
  });

  it.each(['1e5', '-1', '01', ' 1', '1 ', '1.0000001', '.5', '1.', '', '0x10', '1,5', 'NaN'])(
    'rejects %j as malformed',
    (text) => {
      expect(() => parseAmount(text)).toThrow(expect.objectContaining({ reason: 'format' }));
    },
  );

  it.each(['0', '0.0', '0.000000'])('rejects zero %j', (text) => {
    expect(() => parseAmount(text)).toThrow(expect.objectContaining({ reason: 'not_positive' }));
  });

  it('rejects numbers and other non-strings', () => {
    expect(() => parseAmount(5)).toThrow(AmountFormatError);
    expect(() => parseAmount(null)).toThrow(AmountFormatError);
  });

  it('enforces the inclusive maximum', () => {
    expect(parseAmount('10', 10_000_000n)).toBe(10_000_000n);
    expect(() => parseAmount('10.000001', 10_000_000n)).toThrow(expect.objectContaining({ reason: 'too_large' }));
  });
});

describe('formatAmount', () => {
  it.each([
    [12_500_000n, '12.50'],
    [1n, '0.000001'],
    [0n, '0.00'],
    [1_000_000n, '1.00'],
    [1_234_567n, '1.234567'],
    [10_100_000n, '10.10'],
    [10_120_000n, '10.12'],
    [10_123_000n, '10.123'],
  ])('renders %p as %s', (units, text) => {
    expect(formatAmount(units)).toBe(text);
  });

  it('round-trips canonical text', () => {
    for (const t of ['0.01', '5.00', '123.456789', '1000000.00']) expect(formatAmount(parseAmount(t))).toBe(t);
  });
});

describe('quoteFee', () => {
  it('charges 0 bps today and keeps net = gross', () => {
    expect(quoteFee('checkout', 12_500_000n)).toEqual({
      source: 'checkout',
      grossAmount: '12.50',
      feeAmount: '0.00',
      netAmount: '12.50',
      bps: 0,
      currency: 'USDC',
    });
  });

  it('rounds a non-zero schedule down to whole base units', () => {
    const q = quoteFee('p2p', 1_000_001n, { checkout: 0, invoice: 0, escrow: 0, p2p: 250 });
    expect(q.feeAmount).toBe('0.025');
    expect(q.netAmount).toBe('0.975001');
    expect(q.bps).toBe(250);
  });
});
