import { ChainTxError, tokenRefusal } from './errors';

describe('tokenRefusal (FiatToken v2.2 reasons, DESIGN §18)', () => {
  const decoded = (reason: string) => new ChainTxError(`transfer: Error(${reason})`, 'Error', [reason], '0x08c379a0', null);

  it('names a pause and a blacklisted party from the decoded Error(string)', () => {
    expect(tokenRefusal(decoded('Pausable: paused'))).toBe('paused');
    expect(tokenRefusal(decoded('Blacklistable: account is blacklisted'))).toBe('blacklisted');
  });

  it('falls back to the message when the revert data was not decoded', () => {
    expect(tokenRefusal(new ChainTxError('execution reverted: "Pausable: paused"', null, [], null, null))).toBe('paused');
  });

  it('anything else is not the token’s refusal', () => {
    expect(tokenRefusal(decoded('ERC20: transfer amount exceeds balance'))).toBeNull();
    expect(tokenRefusal(new ChainTxError('fund: AlreadyFunded()', 'AlreadyFunded', [], '0x', null))).toBeNull();
    expect(tokenRefusal(new Error('Pausable: paused'))).toBeNull();
  });
});
