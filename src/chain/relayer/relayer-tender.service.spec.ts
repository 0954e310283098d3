import { parseUnits } from 'ethers';
import { replacementFees } from './relayer-tender.service';

const gwei = (v: string) => parseUnits(v, 'gwei');

describe('replacementFees (DESIGN §18: same nonce, both fees +12.5 % or more, up to RELAYER_MAX_FEE_GWEI)', () => {
  it('raises both fees by at least 12.5 % when the node asks for less', () => {
    const f = replacementFees({ maxFeePerGas: gwei('2'), maxPriorityFeePerGas: gwei('1') }, { maxFeePerGas: gwei('1'), maxPriorityFeePerGas: gwei('0.5') }, gwei('100'))!;
    expect(f).toEqual({ maxFeePerGas: gwei('2.25'), maxPriorityFeePerGas: gwei('1.125') });
  });

  it('takes the node fees when they are higher than the +12.5 % minimum', () => {
    const f = replacementFees({ maxFeePerGas: gwei('2'), maxPriorityFeePerGas: gwei('1') }, { maxFeePerGas: gwei('30'), maxPriorityFeePerGas: gwei('3') }, gwei('100'))!;
    expect(f).toEqual({ maxFeePerGas: gwei('30'), maxPriorityFeePerGas: gwei('3') });
  });

  it('caps maxFeePerGas at the cap and the tip at maxFeePerGas', () => {
    const f = replacementFees({ maxFeePerGas: gwei('40'), maxPriorityFeePerGas: gwei('2') }, { maxFeePerGas: gwei('80'), maxPriorityFeePerGas: gwei('60') }, gwei('50'))!;
    expect(f).toEqual({ maxFeePerGas: gwei('50'), maxPriorityFeePerGas: gwei('50') });
  });

  it('gives up (null) when the cap leaves no room for +12.5 %: the node would refuse it as underpriced', () => {
    expect(replacementFees({ maxFeePerGas: gwei('95'), maxPriorityFeePerGas: gwei('1') }, { maxFeePerGas: gwei('200'), maxPriorityFeePerGas: gwei('1') }, gwei('100'))).toBeNull();
  });

  it('rounds up and raises a zero tip to at least 1 wei', () => {
    const f = replacementFees({ maxFeePerGas: 7n, maxPriorityFeePerGas: 0n }, { maxFeePerGas: 0n, maxPriorityFeePerGas: 0n }, gwei('1'))!;
    expect(f).toEqual({ maxFeePerGas: 8n, maxPriorityFeePerGas: 1n });
  });
});
