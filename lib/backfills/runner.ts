/**
 * A chain's backfill runner: one per chain at a time (its lease), so that the chain's backfills share
 * one RPC pace and leave the rest of the node to the live follower. It works on up to
 * `concurrencyPerChain` running backfills at once, oldest first, each block run after block run in
 * order: fetched, matched for the backfill's webhook alone, recorded (through the follower's own
 * code, with the same message ids), then the backfill's checkpoint moved. A crash anywhere makes the
 * next runner read the last run again, which records nothing new (docs/backfills.md).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ChainSettings } from '../config/chains';
import { runtimeConfig } from '../config/runtime';
import type { QueueSender } from '../deliveries/queue';
import { describeFault, isNodeUnavailable, isTransientFault } from '../chains/faults';
import { CATCH_UP_BATCH, ChainFollower, QUARANTINE_AFTER_ATTEMPTS } from '../chains/follower';
import { sleep } from '../chains/follow-loop';
import { ChainNode, LaggingNodeError } from '../chains/rpc';
import type { BlockData } from '../chains/rpc-types';
import { advanceBackfill, endBackfill, getBackfill, releaseRunningBackfill, runningBackfillsOfChain, type BackfillRecord } from '../store/backfills';
import { putQuarantinedBlock, releaseChainLease, takeChainLease } from '../store/chains';
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
}

/** Blocks read and recorded between two moves of a backfill's checkpoint: the follower's catch-up run. */
export const BACKFILL_RUN_BLOCKS = CATCH_UP_BATCH;
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
export async function runBackfills(chain: ChainSettings, options: BackfillRunOptions): Promise<void> {
  const { log, signal, leaseMs } = options;
  const settings = runtimeConfig().backfills;
  const pacer = new RequestPacer(settings.rpcRequestsPerSecond);
  const follower = new ChainFollower(chain, log, options.queue, new ChainNode(chain.rpcUrl, chain.traces, () => pacer.take()));
  const holder = randomUUID();
  const deadline = options.deadline ?? Infinity;
  let stopping = new AbortController();
  const stop = () => stopping.abort();
  signal.addEventListener('abort', stop, { once: true });
  const working = new Map<string, Promise<void>>();
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
          stopping = new AbortController();
          await sleep(Math.min(leaseMs / 3, 5_000), signal);
          continue;
        }
      }
      if (working.size < settings.concurrencyPerChain) {
        try {
          for (const record of await runningBackfillsOfChain(chain.chainId, settings.concurrencyPerChain * 2)) {
            if (working.size >= settings.concurrencyPerChain) break;
            if (working.has(record.backfillId)) continue;
            const runner = new BackfillWork(record, follower, chain, log, stopping.signal, deadline);
            working.set(record.backfillId, runner.run().finally(() => working.delete(record.backfillId)));
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
}

/** One backfill, worked on until it ends, the runner stops, or its deadline passes. */
class BackfillWork {
  /** The block whose notifications failed last for a reason that is not transient, and how many times in a row. */
  private failing: { number: number; attempts: number } | undefined;
  /** The next block when it could not be read, and how many times in a row. */
  private unreadable: { number: number; attempts: number } | undefined;
  private failures = 0;

  constructor(
    private record: BackfillRecord,
    private readonly follower: ChainFollower,
    private readonly chain: ChainSettings,
    private readonly log: Logger,
    private readonly signal: AbortSignal,
    private readonly deadline: number,
  ) {}

  async run(): Promise<void> {
    while (!this.signal.aborted && Date.now() < this.deadline) {
      try {
        if (!(await this.step())) return;
        this.failures = 0;
      } catch (error) {
        this.failures += 1;
        const wait = Math.min(MAX_BACKOFF_MS, 250 * 2 ** Math.min(this.failures - 1, 6));
        this.log.warn('backfill run failed; taken again', { ...this.details(), error: describeFault(error, this.chain.rpcUrl), retryInMs: wait });
        await sleep(wait, this.signal);
      }
    }
  }

  private details() {
    const { backfillId, webhookId, nextBlock } = this.record;
    return { chainId: this.chain.chainId, backfillId, webhookId, block: nextBlock };
  }

  /** One run of blocks; false once the backfill is no longer running. */
  private async step(): Promise<boolean> {
    const current = await getBackfill(this.record.account, this.record.webhookId, this.record.backfillId);
    if (current?.status !== 'running') return false;
    this.record = current;
    const webhook = await getWebhookItem(current.account, current.webhookId);
    if (!webhook) return this.end('failed', 'the webhook was deleted');
    if (webhook.status !== 'active') {
      return this.end('failed', `the webhook was deactivated: blocks from ${current.nextBlock} on were not read; backfill them once it is active again`);
    }
    const first = current.nextBlock;
    const last = Math.min(current.toBlock, first + BACKFILL_RUN_BLOCKS - 1);
    const fetched = await Promise.allSettled(Array.from({ length: last - first + 1 }, (_, index) => this.follower.node.blockAt(first + index)));
    const failedAt = fetched.findIndex((one) => one.status === 'rejected');
    const blocks = fetched.slice(0, failedAt < 0 ? undefined : failedAt).map((one) => (one as PromiseFulfilledResult<BlockData>).value);
    if (blocks.length === 0) return this.unreadableBlock(first, (fetched[0] as PromiseRejectedResult).reason);
    this.unreadable = undefined;
    const { done, notifications } = await this.take(blocks);
    const next = first + done;
    if (!(await advanceBackfill(current, next, notifications))) return false;
    this.record = { ...current, nextBlock: next, notifications: current.notifications + notifications };
    if (next > current.toBlock) return this.end('completed');
    return true;
  }

  /**
   * Records the blocks' notifications for the backfill's webhook; after a failure that asking again
   * does not fix, block by block, a block failing so QUARANTINE_AFTER_ATTEMPTS times quarantined for
   * the webhook (as the follower does). Returns how many blocks, from the first, are done.
   */
  private async take(blocks: BlockData[]): Promise<{ done: number; notifications: number }> {
    const only = new Set([this.record.webhookId]);
    const backfill = { backfillId: this.record.backfillId };
    if (!this.failing || blocks.length === 1) {
      try {
        const notifications = await this.follower.take(blocks, only, backfill);
        this.failing = undefined;
        return { done: blocks.length, notifications };
      } catch (error) {
        if (isTransientFault(error)) throw error;
        if (blocks.length === 1) return this.failedBlock(blocks[0]!, error);
      }
    }
    let notifications = 0;
    for (const [index, data] of blocks.entries()) {
      try {
        notifications += await this.follower.take([data], only, backfill);
        if (this.failing?.number === Number(data.block.number)) this.failing = undefined;
      } catch (error) {
        try {
          if (isTransientFault(error)) throw error;
          await this.failedBlock(data, error);
        } catch (failure) {
          if (index === 0) throw failure;
          // The blocks before it are done; the next run starts at it.
          return { done: index, notifications };
        }
      }
    }
    return { done: blocks.length, notifications };
  }

  /** Counts a block's failure: thrown until it has failed QUARANTINE_AFTER_ATTEMPTS times, then quarantined for the webhook and done. */
  private async failedBlock(data: BlockData, error: unknown): Promise<{ done: number; notifications: number }> {
    const number = Number(data.block.number);
    const attempts = (this.failing?.number === number ? this.failing.attempts : 0) + 1;
    this.failing = { number, attempts };
    if (attempts < QUARANTINE_AFTER_ATTEMPTS) throw error;
    this.failing = undefined;
    const reason = describeFault(error, this.chain.rpcUrl);
    const { account, webhookId } = this.record;
    await putQuarantinedBlock(this.chain.chainId, { number, hash: data.block.hash, reason, attempts, quarantinedAt: Date.now(), webhookId, account });
    this.log.error("backfill: a block's notifications quarantined for the webhook; the backfill goes on", { ...this.details(), block: number, error: reason });
    return { done: 1, notifications: 0 };
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
