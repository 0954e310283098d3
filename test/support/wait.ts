/**
 * Polls `check` until it returns a truthy value (returned) or `timeoutMs` passes; then fails with
 * `label` and the last value `describe` gives. For asynchronous outcomes only: tests assert
 * results, never durations.
 */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  opts: { timeoutMs?: number; intervalMs?: number; label?: string; describe?: () => unknown } = {},
): Promise<NonNullable<T>> {
  const { timeoutMs = 30_000, intervalMs = 50, label = 'condition' } = opts;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) {
      const state = opts.describe ? await opts.describe() : undefined;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${label}${state === undefined ? '' : `: ${JSON.stringify(state)}`}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
