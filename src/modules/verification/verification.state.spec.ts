import {
  applyIdentityOutcome,
  applyOperatorDecision,
  IdentityCheck,
  IdentityOutcome,
  mapProviderStatus,
  matchWalletTransfer,
  overallStatus,
  walletStatus,
} from './verification.state';

const A = '0x00000000000000000000000000000000000000Aa';
const PAY = '0x00000000000000000000000000000000000000Bb';
const OTHER = '0x00000000000000000000000000000000000000Cc';

describe('verification state (docs/architecture.md §12)', () => {
  it.each([
    ['unverified', 'unverified', 'unverified'],
    ['pending', 'unverified', 'pending'],
    ['unverified', 'pending', 'pending'],
    ['unverified', 'expired', 'unverified'],
    ['verified', 'unverified', 'pending'],
    ['unverified', 'verified', 'pending'],
    ['verified', 'verified', 'verified'],
    ['verified', 'expired', 'pending'],
    ['rejected', 'verified', 'rejected'],
    ['rejected', 'unverified', 'rejected'],
  ] as const)('identity %s + wallet %s → %s', (identity, wallet, expected) => {
    expect(overallStatus(identity, wallet)).toBe(expected);
  });

  it('the wallet check resets when the payout address changes and expires after its window', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const stored = { status: 'verified' as const, address: A, expiresAt: new Date('2025-12-31T23:00:00Z') };
    expect(walletStatus(stored, A.toLowerCase(), now)).toBe('verified');
    expect(walletStatus(stored, OTHER, now)).toBe('unverified');
    expect(walletStatus(stored, null, now)).toBe('unverified');
    expect(walletStatus({ ...stored, status: 'pending' }, A, now)).toBe('expired');
    expect(walletStatus({ ...stored, status: 'pending', expiresAt: new Date('2026-01-01T01:00:00Z') }, A, now)).toBe('pending');
  });

  it.each([
    ['stripe', 'verified', 'verified'],
    ['stripe', 'processing', 'pending'],
    ['stripe', 'requires_input', 'pending'],
    ['stripe', 'canceled', 'unverified'],
    ['stripe', 'declined', null],
    ['stripe', 'redacted', null],
    ['sandbox', 'declined', 'rejected'],
    ['sandbox', 'verified', 'verified'],
  ] as const)('%s %s → %s', (provider, status, expected) => {
    expect(mapProviderStatus(provider, status)).toBe(expected);
  });

  describe('identity transitions', () => {
    const pending: IdentityCheck = { status: 'pending', provider: 'stripe', reference: 'vs_1', providerStatus: 'requires_input', lastError: null, decidedBy: null };
    const outcome = (status: IdentityOutcome['status'], reference = 'vs_1', lastError: string | null = null): IdentityOutcome => ({
      provider: 'stripe',
      reference,
      providerStatus: status,
      status,
      lastError,
    });

    it('a pending session takes the outcome; a decided one absorbs every later report; another session is ignored', () => {
      const r = applyIdentityOutcome(pending, outcome('verified'));
      expect(r).toEqual({ next: { ...pending, status: 'verified', providerStatus: 'verified', decidedBy: 'provider' } });
      const verified = (r as { next: IdentityCheck }).next;
      expect(applyIdentityOutcome(verified, outcome('pending', 'vs_1', 'late'))).toEqual({ ignored: 'decided' });
      expect(applyIdentityOutcome({ ...pending, status: 'rejected' }, outcome('verified'))).toEqual({ ignored: 'decided' });
      expect(applyIdentityOutcome({ ...pending, status: 'unverified' }, outcome('verified'))).toEqual({ ignored: 'decided' });
      expect(applyIdentityOutcome(pending, outcome('verified', 'vs_other'))).toEqual({ ignored: 'other_session' });
      expect(applyIdentityOutcome(pending, { ...outcome('verified'), provider: 'sandbox' })).toEqual({ ignored: 'other_session' });
      expect(applyIdentityOutcome(pending, outcome('pending', 'vs_1', 'document_expired'))).toMatchObject({ next: { status: 'pending', lastError: 'document_expired', decidedBy: null } });
    });

    it('the operator decides from any state; reopen forgets the session', () => {
      for (const status of ['unverified', 'pending', 'verified', 'rejected'] as const) {
        expect(applyOperatorDecision({ ...pending, status }, 'approved')).toMatchObject({ status: 'verified', decidedBy: 'operator' });
        expect(applyOperatorDecision({ ...pending, status }, 'declined')).toMatchObject({ status: 'rejected', decidedBy: 'operator' });
        expect(applyOperatorDecision({ ...pending, status }, 'reopen')).toEqual({ status: 'unverified', provider: null, reference: null, providerStatus: null, lastError: null, decidedBy: null });
      }
    });
  });

  describe('matchWalletTransfer', () => {
    const expected = { from: A, payTo: PAY, amount: 1_234_567n, afterBlock: 10n, chainDeadline: 5_000n };
    const block = { number: 11n, timestamp: 4_000n };
    const log = { from: A, to: PAY, value: 1_234_567n, logIndex: 3 };

    it('accepts the exact transfer among others, case-insensitively', () => {
      const noise = { from: OTHER, to: PAY, value: 1_234_567n, logIndex: 1 };
      expect(matchWalletTransfer([noise, { ...log, from: A.toLowerCase() }], block, expected)).toEqual({ log: { ...log, from: A.toLowerCase() } });
    });

    it.each([
      ['no_transfer', [], block],
      ['wrong_recipient', [{ ...log, to: OTHER }], block],
      ['wrong_sender', [{ ...log, from: OTHER }], block],
      ['wrong_amount', [{ ...log, value: 1_234_568n }], block],
      ['wrong_amount', [{ ...log, value: 1_234_566n }], block],
      ['too_early', [log], { number: 10n, timestamp: 4_000n }],
      ['too_late', [log], { number: 11n, timestamp: 5_001n }],
    ] as const)('%s', (reason, logs, b) => {
      expect(matchWalletTransfer(logs, b, expected)).toMatchObject({ reason });
    });

    it('the deadline itself still counts', () => {
      expect(matchWalletTransfer([log], { number: 11n, timestamp: 5_000n }, expected)).toEqual({ log });
    });
  });
});
