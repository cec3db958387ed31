import type { ChainFollower } from '../../lib/chains/follower';

/** Steps until caught up; returns the errors of the steps that failed on the way. */
export async function stepsUntilCaughtUp(follower: ChainFollower, maxSteps = 50): Promise<unknown[]> {
  const failures: unknown[] = [];
  for (let steps = 0; steps < maxSteps; steps += 1) {
    try {
      if ((await follower.step()).caughtUp) return failures;
    } catch (error) {
      failures.push(error);
    }
  }
  throw new Error(`not caught up after ${maxSteps} steps: ${failures.map(String).join('; ')}`);
}
