/**
 * Delays after each failed attempt, in seconds (docs/architecture.md §8): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
 * 10 h, 24 h, 24 h — about three days, so a merchant down over a weekend still gets
 * `checkout.funded`; then the delivery is `failed`.
 */
export const RETRY_SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18000, 36000, 36000, 86400, 86400] as const;

/** Attempts a delivery gets automatically: the first plus one per schedule step (10). */
export const MAX_AUTOMATIC_ATTEMPTS = RETRY_SCHEDULE_SECONDS.length + 1;

/**
 * The delay before the next attempt after `attemptsDone` finished, failed attempts, in
 * milliseconds, scaled by `scale` (WEBHOOK_RETRY_SCALE; tests use 0.001). Attempts beyond the
 * schedule (manual retries) reuse its last step. A receiver's `Retry-After` (seconds) wins when
 * it asks for longer, up to that last step, scaled the same way.
 * @returns null when `attemptsDone >= maxAttempts` (the delivery is then `failed`).
 * @throws RangeError when `attemptsDone < 1` or `scale <= 0`.
 */
export function nextRetryDelayMs(
  attemptsDone: number,
  scale: number,
  maxAttempts: number = MAX_AUTOMATIC_ATTEMPTS,
  retryAfterSeconds: number | null = null,
): number | null {
  if (!Number.isInteger(attemptsDone) || attemptsDone < 1) throw new RangeError('attemptsDone must be an integer >= 1');
  if (!(scale > 0)) throw new RangeError('scale must be > 0');
  if (attemptsDone >= maxAttempts) return null;
  const last = RETRY_SCHEDULE_SECONDS[RETRY_SCHEDULE_SECONDS.length - 1];
  let seconds: number = RETRY_SCHEDULE_SECONDS[Math.min(attemptsDone - 1, RETRY_SCHEDULE_SECONDS.length - 1)];
  if (retryAfterSeconds !== null && retryAfterSeconds > seconds) seconds = Math.min(retryAfterSeconds, last);
  return seconds * 1000 * scale;
}
