import { TokenBucketThrottle } from '../../infra/local/token-bucket';

/** A throttle on a clock the test moves by hand (milliseconds, like performance.now()). */
function throttleWithClock(plan: { rateLimit: number; burstLimit: number }) {
  let now = 1_000;
  const throttle = new TokenBucketThrottle(plan, () => now);
  return {
    take: (key = 'caller') => throttle.take(key),
    advanceSeconds: (seconds: number) => {
      now += seconds * 1000;
    },
  };
}

/** Takes until refused; returns how many were allowed. */
function drain(take: () => number, atMost = 10_000): number {
  let allowed = 0;
  while (allowed < atMost && take() === 0) allowed += 1;
  return allowed;
}

describe('TokenBucketThrottle', () => {
  it('allows a full burst at once', () => {
    const { take } = throttleWithClock({ rateLimit: 2, burstLimit: 5 });
    expect(Array.from({ length: 5 }, () => take())).toEqual([0, 0, 0, 0, 0]);
  });

  it('refuses the request after the burst with a retry-after of at least 1 second', () => {
    const { take } = throttleWithClock({ rateLimit: 2, burstLimit: 5 });
    expect(drain(take)).toBe(5);
    const retryAfter = take();
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
  });

  it('gives a retry-after of at least 1 second even when a token is almost free', () => {
    const { take, advanceSeconds } = throttleWithClock({ rateLimit: 100, burstLimit: 1 });
    take();
    advanceSeconds(0.0099);
    expect(take()).toBe(1);
  });

  it('gives a retry-after that covers the whole wait at a slow rate', () => {
    const { take, advanceSeconds } = throttleWithClock({ rateLimit: 0.25, burstLimit: 1 });
    take();
    const retryAfter = take();
    expect(retryAfter).toBe(4);
    advanceSeconds(retryAfter - 0.01);
    expect(take()).toBeGreaterThan(0);
    advanceSeconds(0.01);
    expect(take()).toBe(0);
  });

  it('refills at the rate: rateLimit tokens per second', () => {
    const { take, advanceSeconds } = throttleWithClock({ rateLimit: 10, burstLimit: 20 });
    drain(take);
    advanceSeconds(0.5);
    expect(drain(take)).toBe(5);
    advanceSeconds(1);
    expect(drain(take)).toBe(10);
  });

  it('does not count refused requests against the refill', () => {
    const { take, advanceSeconds } = throttleWithClock({ rateLimit: 2, burstLimit: 5 });
    drain(take);
    for (let refused = 0; refused < 100; refused += 1) expect(take()).toBeGreaterThan(0);
    advanceSeconds(0.5);
    expect(take()).toBe(0);
  });

  it('keeps a separate bucket for each key', () => {
    const { take } = throttleWithClock({ rateLimit: 1, burstLimit: 3 });
    expect(drain(() => take('key-a'))).toBe(3);
    expect(take('key-a')).toBeGreaterThan(0);
    expect(drain(() => take('key-b'))).toBe(3);
  });

  it('never holds more than the burst, however long the key was idle', () => {
    const { take, advanceSeconds } = throttleWithClock({ rateLimit: 100, burstLimit: 7 });
    drain(take);
    advanceSeconds(24 * 60 * 60);
    expect(drain(take)).toBe(7);
  });
});
