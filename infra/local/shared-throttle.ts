import { createHash } from 'node:crypto';
import type { UsagePlanSettings } from '../../lib/config/stages';
import type { Throttle } from './token-bucket';

/** A grant from the one token bucket of a key (TokenBucketThrottle.takeUpTo, in `npm start`'s first process). */
export type AskForTokens = (bucketKey: string, most: number) => Promise<{ taken: number; retryAfterSeconds: number }>;

interface Allowance {
  tokens: number;
  grantedAt: number;
}

/** What one grant may hold: a hundredth of a second at the key's rate, a tenth of its burst at most. */
export function tokensPerGrant(plan: Pick<UsagePlanSettings, 'rateLimit' | 'burstLimit'>): number {
  return Math.max(1, Math.floor(Math.min(plan.rateLimit / 100, plan.burstLimit / 10)));
}

/** A grant not spent within a second is dropped: tokens are not saved up beyond the bucket's burst. */
const ALLOWANCE_LIFETIME_MS = 1000;

/**
 * A gateway process's view of the token buckets that all of `npm start`'s gateway processes share.
 * A request spends a token granted to this process before, without waiting; when there is none, it
 * asks the bucket for up to `tokensPerGrant` and keeps the rest. So the limits hold across the
 * processes, give or take one grant per process, and at high rates the bucket is asked once per
 * grant rather than once per request. Buckets are named by a hash of the key, not the key.
 */
export class SharedThrottle implements Throttle {
  private readonly allowances = new Map<string, Allowance>();

  constructor(
    private readonly ask: AskForTokens,
    private readonly perGrant: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  take(callerKey: string): number | Promise<number> {
    const allowance = this.unexpired(callerKey);
    if (allowance && allowance.tokens > 0) {
      allowance.tokens -= 1;
      return 0;
    }
    return this.askForTokens(callerKey);
  }

  private async askForTokens(callerKey: string): Promise<number> {
    const { taken, retryAfterSeconds } = await this.ask(bucketKey(callerKey), this.perGrant);
    if (taken === 0) return retryAfterSeconds;
    if (taken > 1) {
      // Requests of the same key may have asked at the same time: their grants add up.
      const left = this.unexpired(callerKey)?.tokens ?? 0;
      if (this.allowances.size > 10_000) this.dropExpired();
      this.allowances.set(callerKey, { tokens: left + taken - 1, grantedAt: this.now() });
    }
    return 0;
  }

  private unexpired(callerKey: string): Allowance | undefined {
    const allowance = this.allowances.get(callerKey);
    return allowance && this.now() - allowance.grantedAt < ALLOWANCE_LIFETIME_MS ? allowance : undefined;
  }

  private dropExpired() {
    for (const key of [...this.allowances.keys()]) if (!this.unexpired(key)) this.allowances.delete(key);
  }
}

const bucketKey = (callerKey: string) => createHash('sha256').update(callerKey).digest('base64url');
