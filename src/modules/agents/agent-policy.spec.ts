import { evaluatePolicy, policyWindows, StoredPolicy } from './agent-policy';
import { parsePolicy } from './agents.service';

const U = 1_000_000n;
const base = { amount: 10n * U, toHandle: 'shop', toAddress: '0x' + 'ab'.repeat(20), now: new Date('2026-11-23T12:00:00Z'), usedToday: 0n, usedThisMonth: 0n, available: 1000n * U };

describe('evaluatePolicy (docs/architecture.md §13)', () => {
  it('allows a spend within every limit, compared in base units (exactly at the limit is allowed)', () => {
    const p: StoredPolicy = { mode: 'autonomous', perTransactionMax: String(10n * U), dailyLimit: String(30n * U), monthlyLimit: String(30n * U) };
    expect(evaluatePolicy(p, { ...base, usedToday: 20n * U, usedThisMonth: 20n * U })).toBeNull();
    expect(evaluatePolicy(p, { ...base, usedToday: 20n * U + 1n })?.details).toEqual({ rule: 'daily_limit', limit: '30.00', used: '20.000001', requested: '10.00' });
  });

  it('no policy → no_policy', () => {
    expect(evaluatePolicy(null, base)?.rule).toBe('no_policy');
  });

  it('checks validity, recipients, per-transaction, daily, monthly, approval, balance in that order', () => {
    const all: StoredPolicy = {
      mode: 'autonomous',
      validFrom: '2027-01-01T00:00:00Z',
      expiresAt: '2026-01-01T00:00:00Z',
      allowedRecipients: ['other'],
      perTransactionMax: String(U),
      dailyLimit: String(U),
      monthlyLimit: String(U),
      approvalThreshold: String(U),
    };
    const order = ['not_yet_valid', 'expired', 'recipient_not_allowed', 'per_transaction_limit', 'daily_limit', 'monthly_limit', 'approval_required', 'insufficient_balance'];
    const fields: Array<keyof StoredPolicy> = ['validFrom', 'expiresAt', 'allowedRecipients', 'perTransactionMax', 'dailyLimit', 'monthlyLimit', 'approvalThreshold'];
    const p = { ...all };
    for (let i = 0; i < order.length; i++) {
      expect(evaluatePolicy(p, { ...base, available: 0n })?.rule).toBe(order[i]);
      if (i < fields.length) delete p[fields[i]];
    }
  });

  it('recipients match the handle or the address, case-insensitively (stored lowercase)', () => {
    expect(evaluatePolicy({ mode: 'autonomous', allowedRecipients: ['shop'] }, { ...base, toHandle: 'SHOP' })).toBeNull();
    expect(evaluatePolicy({ mode: 'autonomous', allowedRecipients: [base.toAddress] }, { ...base, toAddress: base.toAddress.toUpperCase().replace('0X', '0x') })).toBeNull();
  });

  it('UTC windows: the day and the month start at 00:00 UTC', () => {
    expect(policyWindows(new Date('2026-03-31T23:59:59.999Z'))).toEqual({ dayStart: new Date('2026-03-31T00:00:00Z'), monthStart: new Date('2026-03-01T00:00:00Z') });
  });
});

describe('parsePolicy (agent:policy:set)', () => {
  it('stores amounts as base-unit strings, recipients lowercase, times ISO; absent fields unset', () => {
    expect(parsePolicy({ dailyLimit: '100.5', allowedRecipients: ['Shop', ' 0xAB' + 'ab'.repeat(19) + ' '], expiresAt: '2099-01-01T00:00:00Z' }, 1_000_000n * U)).toEqual({
      mode: 'autonomous',
      dailyLimit: '100500000',
      allowedRecipients: ['shop', '0x' + 'ab'.repeat(20)],
      expiresAt: '2099-01-01T00:00:00.000Z',
    });
  });

  it.each([
    [{ dailyLimit: '0' }, 'dailyLimit'],
    [{ perTransactionMax: '1.1234567' }, 'perTransactionMax'],
    [{ mode: 'yolo' }, 'mode'],
    [{ validFrom: 'soon' }, 'validFrom'],
    [{ allowedRecipients: ['not a handle!'] }, 'allowedRecipients'],
  ])('%p → 400 naming %s', (input, param) => {
    expect(() => parsePolicy(input, 1_000_000n * U)).toThrow(expect.objectContaining({ code: 'invalid_request', details: expect.objectContaining({ fields: [expect.objectContaining({ param })] }) }));
  });
});
