import { CoalescingBatcher } from './coalescing-batcher';

describe('CoalescingBatcher', () => {
  it('sends a lone call at once and coalesces calls that arrive while a batch is in flight', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const b = new CoalescingBatcher<number, number>(async (items) => {
      batches.push(items);
      if (batches.length === 1) await gate;
      return items.map((i) => i * 10);
    }, 100, 1);
    const first = b.call(1);
    await Promise.resolve();
    const rest = [2, 3, 4].map((i) => b.call(i));
    release();
    expect(await first).toBe(10);
    expect(await Promise.all(rest)).toEqual([20, 30, 40]);
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it('splits at maxBatch and rejects every call of a failing batch only', async () => {
    let n = 0;
    const b = new CoalescingBatcher<number, number>(async (items) => {
      n++;
      if (items.includes(3)) throw new Error('boom');
      return items;
    }, 2, 1);
    const results = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => b.call(i)));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled']);
    expect(n).toBe(3);
  });

  it('rejects when run returns the wrong number of results', async () => {
    const b = new CoalescingBatcher<number, number>(async () => []);
    await expect(b.call(1)).rejects.toThrow(/0 results for 1/);
  });
});
