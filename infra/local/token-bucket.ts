import type { UsagePlanSettings } from '../../lib/config/stages';

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/** What a request does about the throttle: 0 when it may go; otherwise the whole seconds to wait before a token is free. */
export interface Throttle {
  take(callerKey: string): number | Promise<number>;
}

/**
 * API Gateway's usage-plan throttle, per caller key: a bucket of `burstLimit` tokens refilled at
 * `rateLimit` per second; a request takes one token or is refused.
 */
export class TokenBucketThrottle implements Throttle {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly plan: Pick<UsagePlanSettings, 'rateLimit' | 'burstLimit'>,
    private readonly now: () => number = () => performance.now(),
  ) {}

  take(callerKey: string): number {
    const { taken, retryAfterSeconds } = this.takeUpTo(callerKey, 1);
    return taken ? 0 : retryAfterSeconds;
  }

  /** Takes as many whole tokens as the bucket holds, up to `most`; with none, the whole seconds until one is free. */
  takeUpTo(callerKey: string, most: number): { taken: number; retryAfterSeconds: number } {
    const now = this.now();
    const bucket = this.buckets.get(callerKey) ?? { tokens: this.plan.burstLimit, updatedAt: now };
    bucket.tokens = Math.min(this.plan.burstLimit, bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.plan.rateLimit);
    bucket.updatedAt = now;
    this.buckets.set(callerKey, bucket);
    const taken = Math.min(most, Math.floor(bucket.tokens));
    bucket.tokens -= taken;
    return { taken, retryAfterSeconds: taken ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / this.plan.rateLimit)) };
  }
}
