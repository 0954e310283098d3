import { MAX_AUTOMATIC_ATTEMPTS, nextRetryDelayMs, RETRY_SCHEDULE_SECONDS } from './retry-schedule';

describe('nextRetryDelayMs', () => {
  it('follows docs/architecture.md §8: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, 24 h, 24 h, then gives up', () => {
    const delays = Array.from({ length: 9 }, (_, i) => nextRetryDelayMs(i + 1, 1));
    expect(delays).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000, 86400, 86400].map((s) => s * 1000));
    expect(MAX_AUTOMATIC_ATTEMPTS).toBe(10);
    expect(nextRetryDelayMs(10, 1)).toBeNull();
    expect(RETRY_SCHEDULE_SECONDS.reduce((a, b) => a + b, 0) / 3600).toBeCloseTo(75.6, 1);
  });

  it('scales every step by WEBHOOK_RETRY_SCALE', () => {
    expect(nextRetryDelayMs(1, 0.001)).toBeCloseTo(5);
    expect(nextRetryDelayMs(2, 0.001)).toBeCloseTo(300);
    expect(nextRetryDelayMs(9, 0.001)).toBeCloseTo(86400);
  });

  it('gives a manual retry beyond the schedule the last step, and stops at maxAttempts', () => {
    expect(nextRetryDelayMs(10, 1, 12)).toBe(86400 * 1000);
    expect(nextRetryDelayMs(12, 1, 12)).toBeNull();
  });

  it('lets a longer Retry-After win, capped at the last step', () => {
    expect(nextRetryDelayMs(1, 1, 10, 60)).toBe(60_000);
    expect(nextRetryDelayMs(2, 1, 10, 60)).toBe(300_000);
    expect(nextRetryDelayMs(1, 1, 10, 10 ** 9)).toBe(86400 * 1000);
  });

  it('rejects nonsense input', () => {
    expect(() => nextRetryDelayMs(0, 1)).toThrow(RangeError);
    expect(() => nextRetryDelayMs(1, 0)).toThrow(RangeError);
  });
});
