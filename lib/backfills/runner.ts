/**
 * A chain's backfill runner: one per chain at a time (its lease), so that the chain's backfills share
 * one RPC pace and leave the rest of the node to the live follower. It works on up to
 * `concurrencyPerChain` running backfills at once, each for a turn (`turnSeconds`) and then the longest
 * waiting (so that no account's long backfills hold the chain's backfills up), block run after block run in
 * order: fetched, matched for the backfill's webhook alone, recorded (through the follower's own
 * code, with the same message ids), then the backfill's checkpoint moved. A crash anywhere makes the
 * next runner read the last run again, which records nothing new (docs/backfills.md).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ChainSettings } from '../config/chains';
import { runtimeConfig } from '../config/runtime';
import type { QueueSender, QueuedDelivery } from '../deliveries/queue';
import { describeFault, isNodeUnavailable } from '../chains/faults';
import { blocksPerRun, CATCH_UP_BATCH, ChainFollower } from '../chains/follower';
import { sleep } from '../chains/follow-loop';
import { ChainNode, LaggingNodeError } from '../chains/rpc';
import type { BlockData } from '../chains/rpc-types';
import { advanceBackfill, endBackfill, getBackfill, releaseRunningBackfill, runningBackfillsOfChain, type BackfillRecord } from '../store/backfills';
import { releaseChainLease, takeChainLease } from '../store/chains';
import { getWebhookItem } from '../store/webhooks';
import { RequestPacer } from './pacing';

export interface BackfillRunOptions {
  /** How long the lease lasts without renewal: how soon another runner takes over from a dead one. */
  leaseMs: number;
  /** Stop after this time (a Lambda's deadline); absent: until `signal` aborts. */
  deadline?: number;
  signal: AbortSignal;
  log: Logger;
  /** Where recorded notifications are queued. */
  queue: QueueSender;
  /** The pace of the chain's backfills: the stage's `backfills.rpcRequestsPerSecond` unless given (the bench lifts it). */
  rpcRequestsPerSecond?: number;
}

/**
 * Blocks read and recorded between two moves of a backfill's checkpoint: the follower's catch-up run
 * first, then as many as hold about the transactions of one of its runs (blocksPerRun): more on a
 * chain of sparse blocks (a run's store work is much the same however many empty blocks it has),
 * down to one on a chain of full blocks.
 */
export const FIRST_RUN_BLOCKS = CATCH_UP_BATCH;
/** Transactions a backfill's run holds, about: larger than the live follower's, which overlaps fetching and recording a block at a time, as a backfill's paced requests need not. */
const RUN_TRANSACTIONS = 2_000;
export const MAX_RUN_BLOCKS = 500;
/** A run lasts about this long at most at a backfill's share of the pace, so that a cancel or a stop waits no longer. */
const RUN_SECONDS = 2;
/**
 * Failures in a row to read the same block, with an answer from the node, after which the backfill
 * fails: a node that answers `null` or "missing trie node" for an old block has pruned it.
 */
export const UNREADABLE_BLOCK_ATTEMPTS = 4;
/** How often the running backfills are looked for while fewer than the concurrency are being worked on. */
const LOOK_FOR_WORK_MS = 1_000;
const MAX_BACKOFF_MS = 10_000;

/**
 * Runs the chain's backfills while this process holds the chain's backfill lease, until `signal`
 * aborts or the deadline passes; the backfills under way stop after their current run of blocks.
 */
export async function runBackfills(chain: ChainSettings, options: BackfillRunOptions): Promise<{ rpcRequests: number }> {
  const { log, signal, leaseMs } = options;
  const settings = runtimeConfig().backfills;
  const pace = options.rpcRequestsPerSecond ?? settings.rpcRequestsPerSecond;
  const pacer = new RequestPacer(pace);
  const node = new ChainNode(chain.rpcUrl, chain.traces, () => pacer.take());
  const maxRunBlocks = Math.max(FIRST_RUN_BLOCKS, Math.min(MAX_RUN_BLOCKS, Math.floor((RUN_SECONDS * pace) / settings.concurrencyPerChain)));
  const holder = randomUUID();
  const deadline = options.deadline ?? Infinity;
  let stopping = new AbortController();
  const stop = () => stopping.abort();
  signal.addEventListener('abort', stop, { once: true });
  const working = new Map<string, Promise<void>>();
  // Kept from one turn on a backfill to the next, least recently worked on first: its failures in a row
  // count across turns, so that a block that fails it (a pruned one) does however few attempts fit in one.
  const works = new Map<string, BackfillWork>();
  let leaseUntil = 0;
  try {
    while (!signal.aborted && Date.now() < deadline) {
      const now = Date.now();
      if (leaseUntil - now < (leaseMs * 2) / 3) {
        let held = false;
        try {
          held = await takeChainLease(chain.chainId, holder, now + leaseMs, now, 'backfills');
        } catch (error) {
          log.warn('backfill lease not renewed; asked again', { chainId: chain.chainId, error: (error as Error).message });
        }
        if (held) leaseUntil = now + leaseMs;
        else if (leaseUntil <= Date.now()) {
          // Lost, or held by another runner: the backfills under way stop after their run.
          stopping.abort();
          await Promise.all(working.values());
          works.clear();
          stopping = new AbortController();
          await sleep(Math.min(leaseMs / 3, 5_000, deadline - Date.now()), signal);
          continue;
        }
      }
      if (working.size < settings.concurrencyPerChain) {
        try {
          for (const record of await runningBackfillsOfChain(chain.chainId, settings.concurrencyPerChain * 2)) {
            if (working.size >= settings.concurrencyPerChain) break;
            if (working.has(record.backfillId)) continue;
            const { backfillId } = record;
            const work = works.get(backfillId) ?? new BackfillWork(record, node, options.queue, chain, log, deadline, maxRunBlocks, settings.turnSeconds * 1000);
            works.delete(backfillId);
            works.set(backfillId, work);
            const turn = work.run(stopping.signal).then((ended) => {
              if (ended) works.delete(backfillId);
            });
            working.set(backfillId, turn.finally(() => working.delete(backfillId)));
          }
          // Those the runner has not worked on lately (cancelled while waiting, say) are forgotten beyond the few it lists.
          for (const backfillId of works.keys()) {
            if (works.size <= settings.concurrencyPerChain * 2) break;
            if (!working.has(backfillId)) works.delete(backfillId);
          }
        } catch (error) {
          log.warn('running backfills not read; asked again', { chainId: chain.chainId, error: (error as Error).message });
        }
      }
      await Promise.race([sleep(LOOK_FOR_WORK_MS, signal), ...working.values()]);
    }
  } finally {
    signal.removeEventListener('abort', stop);
    stopping.abort();
    await Promise.all(working.values());
    if (leaseUntil > Date.now()) await releaseChainLease(chain.chainId, holder, 'backfills').catch(() => undefined);
  }
  return { rpcRequests: pacer.taken };
}

/**
 * The delivery queue as one backfill's recordings use it, counting what they queue: the
 * notifications recorded now, each once. A run of blocks that fails on one block has recorded the
 * others' notifications; taken again, they are not new, so the run's answer cannot count them.
 */
class CountingQueue implements QueueSender {
  recorded = 0;

  constructor(private readonly queue: QueueSender) {}

  async send(deliveries: QueuedDelivery[]): Promise<void> {
    this.recorded += deliveries.length;
    await this.queue.send(deliveries);
  }
}

/** One backfill, worked on a turn at a time until it ends, the runner stops, or its deadline passes. */
class BackfillWork {
  /** The next block when it could not be read, and how many times in a row. */
  private unreadable: { number: number; attempts: number } | undefined;
  private failures = 0;
  private readonly queue: CountingQueue;
  private readonly follower: ChainFollower;
  /** The next run's length, from the transactions per block of the last. */
  private runBlocks = FIRST_RUN_BLOCKS;
  /** The end of this turn (or the deadline, when sooner). */
  private until = 0;
  /** Whether the backfill's webhook asks for internal transactions, as last read: its blocks are traced then. */
  private includeInternalTxs = true;

  constructor(
    private record: BackfillRecord,
    node: ChainNode,
    queue: QueueSender,
    private readonly chain: ChainSettings,
    private readonly log: Logger,
    private readonly deadline: number,
    /** The longest run: RUN_SECONDS of the backfill's share of the chain's pace. */
    private readonly maxRunBlocks: number,
    private readonly turnMs: number,
  ) {
    this.queue = new CountingQueue(queue);
    this.follower = new ChainFollower(chain, log, this.queue, node, async () => this.includeInternalTxs);
  }

  /** Works on the backfill for a turn, or until the runner stops; true once it is no longer running. */
  async run(signal: AbortSignal): Promise<boolean> {
    this.until = Math.min(this.deadline, Date.now() + this.turnMs);
    try {
      while (!signal.aborted && Date.now() < this.until) {
        try {
          if (!(await this.step())) return true;
          this.failures = 0;
        } catch (error) {
          this.failures += 1;
          const backoff = Math.min(MAX_BACKOFF_MS, 250 * 2 ** Math.min(this.failures - 1, 6));
          // Not past the turn: the backoff, kept across turns, would hold the backfill's slot for as long as it.
          const wait = Math.max(0, Math.min(backoff, this.until - Date.now()));
          this.log.warn('backfill run failed; taken again', { ...this.details(), error: describeFault(error, this.chain.rpcUrl), retryInMs: wait });
          await sleep(wait, signal);
        }
      }
      return false;
    } finally {
      // Not held while others have their turn.
      this.follower.blocks.forgetPrefetched();
    }
  }

  private details() {
    const { backfillId, webhookId, nextBlock } = this.record;
    return { chainId: this.chain.chainId, backfillId, webhookId, block: nextBlock };
  }

  /** One run of blocks; false once the backfill is no longer running (cancelled, ended by another runner). */
  private async step(): Promise<boolean> {
    const [stored, webhook] = await Promise.all([
      getBackfill(this.record.account, this.record.webhookId, this.record.backfillId),
      getWebhookItem(this.record.account, this.record.webhookId),
    ]);
    if (stored?.status !== 'running') return false;
    const current = (this.record = stored);
    if (!webhook) return this.end('failed', 'the webhook was deleted');
    if (webhook.status !== 'active') {
      return this.end('failed', `the webhook was deactivated: blocks from ${current.nextBlock} on were not read; backfill them once it is active again`);
    }
    this.includeInternalTxs = webhook.includeInternalTxs;
    const first = current.nextBlock;
    const last = Math.min(current.toBlock, first + this.runBlocks - 1);
    const fetched = await this.follower.blocks.blocksFrom(first, last);
    const failedAt = fetched.findIndex((one) => one.status === 'rejected');
    const blocks = fetched.slice(0, failedAt < 0 ? undefined : failedAt).map((one) => (one as PromiseFulfilledResult<BlockData>).value);
    if (blocks.length === 0) return this.unreadableBlock(first, (fetched[0] as PromiseRejectedResult).reason);
    this.unreadable = undefined;
    this.runBlocks = blocksPerRun(blocks, this.maxRunBlocks, RUN_TRANSACTIONS);
    // The next run's blocks are fetched while these are matched and recorded.
    if (failedAt < 0 && last < current.toBlock && Date.now() < this.until) this.follower.blocks.prefetch(last + 1, Math.min(current.toBlock, last + this.runBlocks));
    const recordedBefore = this.queue.recorded;
    const { account, webhookId, backfillId } = current;
    const taken: { notifications: number; tracesOmitted?: number } = { notifications: 0 };
    const done = await this.follower.takeOrQuarantine(blocks, taken, { account, webhookId, backfillId });
    this.follower.blocks.countUntraced(blocks.slice(0, done), taken);
    const notifications = this.queue.recorded - recordedBefore;
    const next = first + done;
    // Not moved: cancelled, or moved by another runner meanwhile; the next step reads it again.
    if (!(await advanceBackfill(current, next, notifications))) return true;
    this.record = { ...current, nextBlock: next, notifications: current.notifications + notifications, updatedAt: Date.now() };
    if (next > current.toBlock) return this.end('completed');
    return true;
  }

  /**
   * The backfill's next block could not be read. A node down or slow is waited for; one that answers
   * without the block (`null`, "missing trie node": it has pruned it) ends the backfill as failed
   * once it has done so UNREADABLE_BLOCK_ATTEMPTS times in a row.
   */
  private async unreadableBlock(number: number, error: unknown): Promise<boolean> {
    // Behind the chain's checkpoint, a node answering `null` (LaggingNodeError) is not behind: it does not have the block.
    if (!(error instanceof LaggingNodeError) && isNodeUnavailable(error)) throw error;
    const attempts = (this.unreadable?.number === number ? this.unreadable.attempts : 0) + 1;
    this.unreadable = { number, attempts };
    if (attempts < UNREADABLE_BLOCK_ATTEMPTS) throw error;
    const why =
      error instanceof LaggingNodeError
        ? `the node has no block ${number} (a node that prunes old blocks cannot serve them): backfill from an archive node's chain`
        : `the node could not serve block ${number}: ${describeFault(error, this.chain.rpcUrl)}`;
    return this.end('failed', why);
  }

  private async end(status: 'completed' | 'failed', reason?: string): Promise<false> {
    const ended = await endBackfill(this.record, status, reason);
    await releaseRunningBackfill(this.record.account, this.record.webhookId, this.record.backfillId);
    if (ended) {
      const details = { ...this.details(), status, notifications: ended.notifications, ...(reason ? { reason } : {}) };
      if (status === 'failed') this.log.warn('backfill failed', details);
      else this.log.info('backfill completed', details);
    }
    return false;
  }
}
