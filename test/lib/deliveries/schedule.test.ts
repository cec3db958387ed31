import { HOSTED_RETRY_SCHEDULE_SECONDS } from '../../../lib/config/stages';
import { retryDelayMs } from '../../../lib/deliveries/schedule';

const middle = () => 0.5;

describe('retryDelayMs', () => {
  it("follows the hosted API's schedule: 10 s, 1 min, 5 min, 10 min, 30 min, 2 h, 6 h, 12 h, 24 h, then none", () => {
    const delays = Array.from({ length: 10 }, (_, index) => retryDelayMs(HOSTED_RETRY_SCHEDULE_SECONDS, index + 1, undefined, middle));
    expect(delays).toEqual([10, 60, 300, 600, 1800, 7200, 21600, 43200, 86400].map((seconds) => seconds * 1000).concat([undefined as never]));
  });

  it('jitters each delay by at most ±10 %', () => {
    expect(retryDelayMs([10], 1, undefined, () => 0)).toBe(9000);
    expect(retryDelayMs([10], 1, undefined, () => 0.999999)).toBe(11000);
  });

  it("honours Retry-After within the schedule's next two steps", () => {
    // Sooner than the schedule: the schedule's delay stands.
    expect(retryDelayMs([10, 60, 300], 1, 2, middle)).toBe(10_000);
    // Between the next step and the one after: as asked.
    expect(retryDelayMs([10, 60, 300], 1, 30, middle)).toBe(30_000);
    // Beyond the step after the next: capped there.
    expect(retryDelayMs([10, 60, 300], 1, 3600, middle)).toBe(60_000);
    // At the last step, the cap is that step.
    expect(retryDelayMs([10, 60], 2, 3600, middle)).toBe(60_000);
  });

  it('has no retry for an empty schedule', () => {
    expect(retryDelayMs([], 1)).toBeUndefined();
  });
});
