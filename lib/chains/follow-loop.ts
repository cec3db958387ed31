import { randomUUID } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ChainSettings } from '../config/chains';
import type { QueueSender } from '../deliveries/queue';
import { recordChainHead, releaseChainLease, takeChainLease } from '../store/chains';
import { describeFault } from './faults';
import { ChainFollower, type StepResult } from './follower';
import { LaggingNodeError } from './rpc';

export interface FollowOptions {
  /** How long the lease lasts without renewal: how soon another follower takes over from a dead one. */
  leaseMs: number;
  /** Stop taking steps after this time (a Lambda's deadline); absent: until `signal` aborts. */
  deadline?: number;
  signal: AbortSignal;
  log: Logger;
  /** Where recorded notifications are queued. */
  queue: QueueSender;
  /** Called after each step: lag logging and metrics. */
  onStep?: (result: StepResult) => void;
}

const MAX_BACKOFF_MS = 10_000;
const LAG_LOGGED_BLOCKS = 10;
const LAG_LOG_INTERVAL_MS = 10_000;
/** How often the head is recorded for GET /v1/chains while the checkpoint stays where it is: one write, not one a poll. */
const HEAD_RECORD_INTERVAL_MS = 5_000;

/**
 * Follows the chain while this process holds its lease: one follower per chain at a time, across
 * processes and Lambda invocations. Steps back to back while behind, then every poll interval.
 */
export async function followChain(chain: ChainSettings, options: FollowOptions): Promise<void> {
  const { log, signal, leaseMs } = options;
  const follower = new ChainFollower(chain, log, options.queue);
  const holder = randomUUID();
  const deadline = options.deadline ?? Infinity;
  let leaseUntil = 0;
  let failures = 0;
  let lagLoggedAt = 0;
  let headRecorded = { at: 0, checkpoint: -1 };
  while (!signal.aborted && Date.now() < deadline) {
    let wait = chain.pollIntervalMs;
    try {
      const now = Date.now();
      if (leaseUntil - now < (leaseMs * 2) / 3) {
        if (!(await takeChainLease(chain.chainId, holder, now + leaseMs, now))) {
          leaseUntil = 0;
          await sleep(Math.min(leaseMs / 3, 5_000), signal);
          continue;
        }
        leaseUntil = now + leaseMs;
      }
      const result = await follower.step();
      options.onStep?.(result);
      if (result.checkpoint !== headRecorded.checkpoint || Date.now() - headRecorded.at >= HEAD_RECORD_INTERVAL_MS) {
        // The step is done: a head not recorded is shown older by GET /v1/chains until the next try, no reason to back off.
        try {
          await recordChainHead(chain.chainId, { number: result.head, seenAt: Date.now() });
          headRecorded = { at: Date.now(), checkpoint: result.checkpoint };
        } catch (error) {
          log.warn('chain head not recorded; recorded again after the next step', { chainId: chain.chainId, error: describeFault(error, chain.rpcUrl) });
        }
      }
      failures = 0;
      if (!result.caughtUp) wait = 0;
      if (result.lag > LAG_LOGGED_BLOCKS && Date.now() - lagLoggedAt > LAG_LOG_INTERVAL_MS) {
        log.info('chain follower catching up', { chainId: chain.chainId, lag: result.lag, block: result.checkpoint });
        lagLoggedAt = Date.now();
      } else if (lagLoggedAt > 0 && result.lag === 0) {
        log.info('chain follower caught up', { chainId: chain.chainId, block: result.checkpoint });
        lagLoggedAt = 0;
      }
    } catch (error) {
      failures += 1;
      wait = Math.min(MAX_BACKOFF_MS, 250 * 2 ** Math.min(failures, 6));
      const details = { chainId: chain.chainId, error: describeFault(error, chain.rpcUrl), retryInMs: wait };
      if (error instanceof LaggingNodeError) log.warn('the node is behind; asking again', details);
      else log.error('chain follower step failed', details);
    }
    await sleep(wait, signal);
  }
  if (leaseUntil > Date.now()) await releaseChainLease(chain.chainId, holder).catch(() => undefined);
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
