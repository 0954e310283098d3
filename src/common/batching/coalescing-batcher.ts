/**
 * Coalesces concurrent calls into batches (group commit): while `maxInFlight` batches are
 * running, new calls wait and leave together in the next one, up to `maxBatch` items. An idle
 * batcher sends a lone call at once, so it adds no latency at low load; under load it turns N
 * round trips into a few. `run` must return one result per item, in order; if it throws, every
 * call of that batch rejects with the error.
 */
export class CoalescingBatcher<I, O> {
  private readonly waiting: Array<{ item: I; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  private inFlight = 0;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxBatch = 200,
    private readonly maxInFlight = 2,
  ) {}

  call(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.maxBatch);
      this.inFlight++;
      Promise.resolve()
        .then(() => this.run(batch.map((b) => b.item)))
        .then(
          (out) => {
            if (out.length !== batch.length) throw new Error(`batch returned ${out.length} results for ${batch.length} items`);
            batch.forEach((b, i) => b.resolve(out[i]));
          },
        )
        .catch((err: unknown) => batch.forEach((b) => b.reject(err)))
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }
}
