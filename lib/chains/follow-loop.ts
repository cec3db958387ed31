import { randomUUID } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ChainSettings } from '../config/chains';
import type { QueueSender } from '../deliveries/queue';
import { getCheckpoint, getFollowerStatus, recordChainHead, recordFollowerStatus, releaseChainLease, takeChainLease, type FollowerStatus } from '../store/chains';
import { describeFault, isNodeUnreachable } from './faults';
import { ChainFollower, type StepResult } from './follower';
import { FollowerWatch, statusChanged, type FailureLog } from './follower-status';
import { checkNodeChain, WrongChainError } from './node-identity';
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
  /** Called with each status recorded (every few seconds, whatever the steps do): the stall metric. */
  onStatus?: (status: FollowerStatus) => void;
  /** How long the checkpoint may stay still while the chain has blocks after it before the follower is stalled; STALLED_AFTER_MS unless given (tests). */
  stalledAfterMs?: number;
  /** How often the head is asked for when no step has seen it lately; HEAD_POLL_INTERVAL_MS unless given (tests). */
  headPollMs?: number;
  /** How soon a node that answered another chain is asked again; WRONG_CHAIN_RECHECK_MS unless given (tests). */
  wrongChainRecheckMs?: number;
}

const MAX_BACKOFF_MS = 10_000;
const LAG_LOGGED_BLOCKS = 10;
const LAG_LOG_INTERVAL_MS = 10_000;
/** How often the head and the status are recorded for GET /v1/chains while nothing changes: one write, not one a poll. */
const HEAD_RECORD_INTERVAL_MS = 5_000;
/** A follower whose checkpoint has not moved for this long while the chain had blocks after it is stalled (GET /v1/chains). */
export const STALLED_AFTER_MS = 60_000;
/** The head is asked for beside the steps this often when they have not seen it: a step stuck on a block leaves a fresh head. */
export const HEAD_POLL_INTERVAL_MS = 2_000;
/** A node of another chain is asked again this often, so that a fixed URL is followed without a restart. */
export const WRONG_CHAIN_RECHECK_MS = 60_000;
/** How long past a poll interval the head poll waits for the node before it counts as not answering. */
const HEAD_POLL_TIMEOUT_MS = 8_000;
/** How long a stop waits for the head poll under way. */
const POLL_STOP_WAIT_MS = 1_000;
/** A run of failures of one kind is logged when it begins, when its kind changes, and again this often. */
const FAILURE_REMINDER_MS = 5 * 60_000;

/**
 * Follows the chain while this process holds its lease: one follower per chain at a time, across
 * processes and Lambda invocations. Steps back to back while behind, then every poll interval.
 * Beside the steps, the head is polled and the follower's status recorded, so that a step stuck on
 * a block shows as stalled rather than as a healthy follower with an old head.
 */
export async function followChain(chain: ChainSettings, options: FollowOptions): Promise<void> {
  const { log, signal, leaseMs } = options;
  const follower = new ChainFollower(chain, log, options.queue);
  const watch = new FollowerWatch(chain.confirmations, options.stalledAfterMs ?? STALLED_AFTER_MS, FAILURE_REMINDER_MS);
  const deadline = options.deadline ?? Infinity;
  const recheckMs = options.wrongChainRecheckMs ?? WRONG_CHAIN_RECHECK_MS;
  const state: LoopState = { nodeChecked: false, wake: new AbortController(), wakePoll: new AbortController() };
  watch.resume(await getFollowerStatus(chain.chainId).catch(() => undefined));
  // The status is recorded as soon as the lease is taken, not a poll interval later.
  const lease = chainLease(chain.chainId, leaseMs, () => state.wakePoll.abort());
  const done = new AbortController();
  const heads = headRecorder(chain, log);
  const polling = pollHead(chain, follower, watch, { heads, lease, state }, { ...options, signal: AbortSignal.any([signal, done.signal]), deadline });
  let failures = 0;
  let lagLoggedAt = 0;
  let recheckAt = 0;
  try {
    while (!signal.aborted && Date.now() < deadline) {
      let wait = chain.pollIntervalMs;
      try {
        if (!(await lease.hold())) {
          watch.forgetCheckpoint();
          await sleep(Math.min(leaseMs / 3, 5_000), signal);
          continue;
        }
        if (!state.nodeChecked) {
          if (Date.now() < recheckAt) {
            await sleep(Math.min(recheckAt - Date.now(), leaseMs / 3), signal);
            continue;
          }
          try {
            await checkNodeChain(follower.node, chain.chainId);
          } catch (error) {
            if (!(error instanceof WrongChainError)) throw error;
            if (watch.nodeOfWrongChain(error, Date.now())) {
              log.error('the node is not the configured chain: nothing of it is followed until it is', {
                chainId: chain.chainId,
                nodeChainId: error.answered,
                error: error.kindOfFault,
                askedAgainEverySeconds: recheckMs / 1000,
              });
            }
            recheckAt = Date.now() + recheckMs;
            continue;
          }
          state.nodeChecked = true;
          if (watch.nodeOfTheChain()) log.info('the node answers the configured chain now; following it', { chainId: chain.chainId });
        }
        const result = await follower.step();
        options.onStep?.(result);
        const seenAt = Date.now();
        watch.sawHead(result.head, seenAt);
        watch.sawCheckpoint(result.checkpoint, seenAt);
        // The head shown is never below the checkpoint: it is recorded whenever the checkpoint moves.
        if (result.checkpoint !== heads.recorded.checkpoint) await heads.record(result.head, result.checkpoint);
        const recovered = watch.stepSucceeded(seenAt);
        if (recovered) {
          log.info('node answering again', {
            chainId: chain.chainId,
            afterSeconds: Math.round((seenAt - recovered.since) / 1000),
            failedSteps: recovered.failures,
            cause: recovered.kind,
          });
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
        // A node that was not reached may be another once it answers: asked which chain it is first.
        if (isNodeUnreachable(error)) state.nodeChecked = false;
        logFailure(log, chain, error, watch.stepFailed(error, Date.now()), wait);
      }
      state.wake = new AbortController();
      await sleep(wait, signal, state.wake.signal);
    }
  } finally {
    done.abort();
    // Not past a Lambda's margin for a head poll that waits on a node that hangs: what it would record is not needed any more.
    await Promise.race([polling, sleep(POLL_STOP_WAIT_MS)]);
    await lease.release();
  }
}

/** The chain's lease for this process: taken by the steps' loop, kept by both loops (a step stuck on a block is no dead follower). */
function chainLease(chainId: string, leaseMs: number, onTaken: () => void) {
  const holder = randomUUID();
  let until = 0;
  return {
    held: () => until > Date.now(),
    /** Takes or renews it when a third of it has run; returns whether this process holds it. */
    async hold(): Promise<boolean> {
      const now = Date.now();
      if (until - now >= (leaseMs * 2) / 3) return true;
      if (!(await takeChainLease(chainId, holder, now + leaseMs, now))) {
        until = 0;
        return false;
      }
      if (until === 0) onTaken();
      until = now + leaseMs;
      return true;
    },
    async release(): Promise<void> {
      if (until > Date.now()) await releaseChainLease(chainId, holder).catch(() => undefined);
    },
  };
}

/** A failed step, logged when its run of failures begins, changes kind, or every few minutes: with its cause (faultKind), never the RPC URL. */
function logFailure(log: Logger, chain: ChainSettings, error: unknown, logged: FailureLog, retryInMs: number): void {
  if (!logged) return;
  const { run } = logged;
  const details = {
    chainId: chain.chainId,
    error: describeFault(error, chain.rpcUrl),
    cause: run.kind,
    retryInMs,
    ...(logged.why === 'changed' ? { previously: logged.previously } : {}),
    ...(logged.why === 'began' ? { loggedAgain: 'when its cause changes, when it ends, and every 5 minutes' } : { failingForSeconds: Math.round((Date.now() - run.since) / 1000), failedSteps: run.failures }),
  };
  if (error instanceof LaggingNodeError) log.warn('the node is behind; asking again', details);
  else log.error('chain follower step failed', details);
}

interface LoopState {
  /** Whether the node was asked its chain id since the start, or since it was last out of reach. */
  nodeChecked: boolean;
  /** Aborted to cut the steps' pause short: the node answers again. */
  wake: AbortController;
  /** Aborted to cut the head poll's pause short: the lease is taken. */
  wakePoll: AbortController;
}

/** The head as recorded for GET /v1/chains: when, and the checkpoint then. */
function headRecorder(chain: ChainSettings, log: Logger) {
  const heads = {
    recorded: { at: 0, checkpoint: -1 },
    async record(number: number, checkpoint: number | undefined): Promise<void> {
      // A head not recorded is shown older by GET /v1/chains until the next try, no reason to stop.
      try {
        await recordChainHead(chain.chainId, { number, seenAt: Date.now() });
        heads.recorded = { at: Date.now(), checkpoint: checkpoint ?? -1 };
      } catch (error) {
        log.warn('chain head not recorded; recorded again at the next try', { chainId: chain.chainId, error: describeFault(error, chain.rpcUrl) });
      }
    },
  };
  return heads;
}

/**
 * Beside the steps, while this process holds the lease: asks for the head when no step has seen it
 * lately, records it every HEAD_RECORD_INTERVAL_MS, and records the follower's status then and
 * whenever it changes. Wakes the steps when the node answers again after failing to.
 */
async function pollHead(
  chain: ChainSettings,
  follower: ChainFollower,
  watch: FollowerWatch,
  { heads, lease, state }: { heads: ReturnType<typeof headRecorder>; lease: ReturnType<typeof chainLease>; state: LoopState },
  options: FollowOptions & { deadline: number },
): Promise<void> {
  const { signal, log } = options;
  const pollMs = options.headPollMs ?? HEAD_POLL_INTERVAL_MS;
  const rpc = chain.rpcUrl === chain.publicRpcUrl ? 'public' : 'configured';
  let recorded: FollowerStatus | undefined;
  let warned = false;
  const pollOnce = async () => {
    if (watch.checkpoint === undefined) {
      const checkpoint = await getCheckpoint(chain.chainId);
      if (checkpoint && watch.checkpoint === undefined) watch.sawCheckpoint(checkpoint.number, Date.now());
    }
    if (!watch.ofWrongChain && Date.now() - (watch.head?.seenAt ?? 0) >= pollMs) {
      try {
        if (watch.sawHead(await headWithin(follower, pollMs + HEAD_POLL_TIMEOUT_MS), Date.now())) state.wake.abort();
      } catch (error) {
        watch.headFailed(error, Date.now());
      }
    }
    const now = Date.now();
    if (state.nodeChecked && watch.head && now - heads.recorded.at >= HEAD_RECORD_INTERVAL_MS) await heads.record(watch.head.number, watch.checkpoint);
    const status = watch.status(now, rpc, follower.node.traceMethod);
    if (!statusChanged(recorded, status) && now - recorded!.recordedAt < HEAD_RECORD_INTERVAL_MS) return;
    await recordFollowerStatus(chain.chainId, status);
    recorded = status;
    warned = false;
    options.onStatus?.(status);
  };
  while (!signal.aborted && Date.now() < options.deadline) {
    try {
      // Only the lease's holder records: the steps' loop takes the lease, this one keeps it while a step lasts.
      if (lease.held() && (await lease.hold())) await pollOnce();
    } catch (error) {
      // The store failing: the steps fail too, and say so; tried again at the next poll.
      if (!warned) log.warn('chain follower status not recorded; recorded again at the next try', { chainId: chain.chainId, error: describeFault(error, chain.rpcUrl) });
      warned = true;
    }
    state.wakePoll = new AbortController();
    await sleep(pollMs, signal, state.wakePoll.signal);
  }
}

/**
 * The node's head, or a timeout: the node's client waits up to a minute (20 s, retried twice), and
 * the status would wait with it, still saying what it said before the node stopped answering.
 */
function headWithin(follower: ChainFollower, ms: number): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`the node did not answer its head within ${ms} ms`), { kindOfFault: 'timeout' })), ms);
  });
  return Promise.race([follower.node.head(), timeout]).finally(() => clearTimeout(timer));
}

/** Resolves after `ms`, or at once when one of `signals` aborts. */
export function sleep(ms: number, ...signals: AbortSignal[]): Promise<void> {
  // Not AbortSignal.any: a signal made at every pause would stay tied to the long-lived one.
  if (ms <= 0 || signals.some((signal) => signal.aborted)) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    for (const signal of signals) signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      for (const signal of signals) signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
