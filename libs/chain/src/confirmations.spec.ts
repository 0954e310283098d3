import { defaultConfirmations, isConfirmed, lastConfirmedBlock } from './confirmations';

describe('the confirmation rule (DESIGN §18: head − CONFIRMATIONS ≥ block)', () => {
  it('counts a block once CONFIRMATIONS blocks are on top of it, not before', () => {
    expect(isConfirmed(100, 101, 2)).toBe(false);
    expect(isConfirmed(100, 102, 2)).toBe(true);
    expect(isConfirmed(100, 100, 0)).toBe(true);
    expect(isConfirmed(101, 100, 0)).toBe(false);
    expect(lastConfirmedBlock(102, 2)).toBe(100);
  });

  it('defaults to 0 on anvil and 2 elsewhere', () => {
    expect(defaultConfirmations(31337)).toBe(0);
    expect(defaultConfirmations(8453)).toBe(2);
  });
});
