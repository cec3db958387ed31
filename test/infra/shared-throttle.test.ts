import { SharedThrottle, tokensPerGrant } from '../../infra/local/shared-throttle';
import { TokenBucketThrottle } from '../../infra/local/token-bucket';

/** One token bucket, as `npm start`'s first process holds it, and `count` gateway processes' throttles drawing on it, on a clock the test moves. */
function sharedBuckets(plan: { rateLimit: number; burstLimit: number }, count: number) {
  let now = 1_000;
  const clock = () => now;
  const buckets = new TokenBucketThrottle(plan, clock);
  const asked: string[] = [];
  const processes = Array.from(
    { length: count },
    () =>
      new SharedThrottle(
        async (bucketKey, most) => {
          asked.push(bucketKey);
          return buckets.takeUpTo(bucketKey, most);
        },
        tokensPerGrant(plan),
        clock,
      ),
  );
  return { processes, asked, advanceSeconds: (seconds: number) => (now += seconds * 1000) };
}

/** Requests of one key, sent to the processes in turn; how many were let through. */
async function allowed(processes: SharedThrottle[], requests: number, key = 'whk_caller'): Promise<number> {
  let through = 0;
  for (let index = 0; index < requests; index += 1) if ((await processes[index % processes.length]!.take(key)) === 0) through += 1;
  return through;
}

describe('SharedThrottle', () => {
  it('lets through one burst across the processes, not one per process', async () => {
    const { processes } = sharedBuckets({ rateLimit: 1, burstLimit: 3 }, 2);
    expect(await allowed(processes, 8)).toBe(3);
  });

  it('refuses with the bucket’s retry-after once the burst is spent', async () => {
    const { processes } = sharedBuckets({ rateLimit: 0.5, burstLimit: 2 }, 2);
    expect(await allowed(processes, 2)).toBe(2);
    expect(await processes[0]!.take('whk_caller')).toBe(2);
    expect(await processes[1]!.take('whk_caller')).toBe(2);
  });

  it('keeps a separate bucket for each key', async () => {
    const { processes } = sharedBuckets({ rateLimit: 1, burstLimit: 3 }, 2);
    expect(await allowed(processes, 5, 'whk_one')).toBe(3);
    expect(await allowed(processes, 5, 'whk_two')).toBe(3);
  });

  it('at a high rate asks the bucket once per grant, and spends the grant without asking', async () => {
    const plan = { rateLimit: 10_000, burstLimit: 20_000 };
    const { processes, asked } = sharedBuckets(plan, 2);
    expect(tokensPerGrant(plan)).toBe(100);
    expect(await allowed(processes, 1_000)).toBe(1_000);
    expect(asked.length).toBe(10); // 500 requests each, 100 tokens a grant
  });

  it('never lets more through than the bucket holds plus what the processes were granted and have not spent', async () => {
    const plan = { rateLimit: 1_000, burstLimit: 5_000 };
    const { processes, advanceSeconds } = sharedBuckets(plan, 2);
    let through = 0;
    for (let second = 0; second < 5; second += 1) {
      through += await allowed(processes, 10_000);
      advanceSeconds(1);
    }
    // The bucket gives its burst, then a second's rate each second; grants move tokens, they do not
    // make them. What each process holds unspent when a second ends is dropped, a grant at most.
    expect(through).toBeLessThanOrEqual(plan.burstLimit + 4 * plan.rateLimit);
    expect(through).toBeGreaterThanOrEqual(plan.burstLimit + 4 * plan.rateLimit - 5 * 2 * tokensPerGrant(plan));
  });

  it('drops a grant it has not spent within a second', async () => {
    const { processes, asked, advanceSeconds } = sharedBuckets({ rateLimit: 1_000, burstLimit: 2_000 }, 1);
    expect(await allowed(processes, 1)).toBe(1);
    expect(asked.length).toBe(1);
    advanceSeconds(1.5);
    expect(await allowed(processes, 1)).toBe(1);
    expect(asked.length).toBe(2);
  });

  it('names buckets by a hash of the key, never the key itself', async () => {
    const { processes, asked } = sharedBuckets({ rateLimit: 1, burstLimit: 3 }, 1);
    await processes[0]!.take('whk_secret_key_value');
    expect(asked).toHaveLength(1);
    expect(asked[0]).not.toContain('whk_secret_key_value');
    expect(asked[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
