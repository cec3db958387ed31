/**
 * When a failed message is tried again. `attemptsMade` counts the scheduled attempts so far (1 after
 * the first). Returns the delay in milliseconds, or undefined when the schedule is spent and the
 * message has failed.
 *
 * Each delay is jittered by ±10 %, so that messages that failed together do not all come back at
 * once. A `Retry-After` (on a 429 or 503) is honoured within the schedule's next two steps: the next
 * attempt comes no sooner than the receiver asked, but never later than the step after the next.
 */
export function retryDelayMs(
  scheduleSeconds: readonly number[],
  attemptsMade: number,
  retryAfterSeconds?: number,
  random: () => number = Math.random,
): number | undefined {
  const next = scheduleSeconds[attemptsMade - 1];
  if (next === undefined) return undefined;
  const jittered = next * (0.9 + 0.2 * random());
  if (retryAfterSeconds === undefined) return Math.round(jittered * 1000);
  const latest = scheduleSeconds[attemptsMade] ?? next;
  return Math.round(Math.min(Math.max(retryAfterSeconds, jittered), Math.max(latest, jittered)) * 1000);
}
