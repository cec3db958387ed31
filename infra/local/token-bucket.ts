import type { UsagePlanSettings } from '../../lib/config/stages';

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * API Gateway's usage-plan throttle, per caller key: a bucket of `burstLimit` tokens refilled at
 * `rateLimit` per second; a request takes one token or is refused.
 */
export class TokenBucketThrottle {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly plan: Pick<UsagePlanSettings, 'rateLimit' | 'burstLimit'>,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** 0 when the request may go; otherwise the whole seconds to wait before a token is free. */
  take(callerKey: string): number {
    const now = this.now();
    const bucket = this.buckets.get(callerKey) ?? { tokens: this.plan.burstLimit, updatedAt: now };
    bucket.tokens = Math.min(this.plan.burstLimit, bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.plan.rateLimit);
    bucket.updatedAt = now;
    this.buckets.set(callerKey, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.plan.rateLimit));
  }
}
