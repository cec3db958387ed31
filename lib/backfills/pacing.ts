import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A token bucket for one chain's backfill requests: `perSecond` on average, with bursts of a tenth
 * of a second's worth so that a block's requests still go out together (one JSON-RPC batch). A taker
 * beyond the bucket waits its turn: the tokens are reserved in the order they are asked for.
 */
export class RequestPacer {
  private tokens: number;
  private refilledAt = performance.now();
  private readonly burst: number;
  /** Requests paced so far. */
  taken = 0;

  constructor(private readonly perSecond: number) {
    this.burst = Math.max(1, perSecond / 10);
    this.tokens = this.burst;
  }

  async take(): Promise<void> {
    this.taken += 1;
    if (this.perSecond === Infinity) return;
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.refilledAt) * this.perSecond) / 1000);
    this.refilledAt = now;
    this.tokens -= 1;
    if (this.tokens < 0) await sleep((-this.tokens * 1000) / this.perSecond);
  }
}
