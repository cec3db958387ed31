/**
 * The chain follower: takes each block once it is `confirmations` deep, in order, checks that it
 * extends the last one taken (else walks back to where the chain forked and goes on from there),
 * records the notifications its transactions make, and only then moves the chain's checkpoint. A
 * crash anywhere makes the next follower take the last step's blocks again (one block at the head;
 * up to CATCH_UP_BATCH while catching up, fewer when they are full: blocksPerRun), and since message
 * ids are derived from the webhook, chain, block and transaction, recording them again records
 * nothing new and queues nothing twice: a follower stopped in the middle of a block (a Lambda's
 * timeout, a SIGKILL) is resumed by the next one from where its writes ended.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ChainSettings } from '../config/chains';
import { recordNotifications, recordWebhooksNotifications } from '../deliveries/messages';
import type { QueueSender } from '../deliveries/queue';
import { originOf } from '../store/endpoint-health';
import { getCheckpoint, getUnhashedCheckpoint, moveCheckpoint, putQuarantinedBlock, RECENT_BLOCKS_KEPT, type BlockRef, type Checkpoint } from '../store/chains';
import { describeFault, isNodeUnavailable, isTransientFault } from './faults';
import { BlockSource, type TracesWanted } from './block-source';
import { matchBlocks } from './matcher';
import { BlockNotifications, WebhooksFailed } from './notifications';
import { tokenAddressesOf } from './payload';
import { ChainNode, LaggingNodeError } from './rpc';
import type { BlockData } from './rpc-types';
import { TokenMetadataCache } from './tokens';

/** Blocks fetched, matched and checkpointed at once while catching up (their requests go in JSON-RPC batches), at most. */
export const CATCH_UP_BATCH = 50;
/**
 * Transactions a run of blocks holds, about: their receipts and traces are in memory together, and a
 * run is recorded whole before the checkpoint moves, while the next run is fetched. Small enough that
 * recording one run and fetching the next overlap at a block's grain on a busy chain (a run is one
 * block of 300 transactions or more), large enough that a run's few fixed requests (the checkpoint,
 * the trace and inactive-webhook queries) stay small beside its matching and recording.
 */
const RUN_TRANSACTIONS = 500;
/**
 * Transactions asked for ahead of the run being recorded, about, while catching up (at least a run's):
 * the node works on several blocks at once (as a node answers many requests at once) while the
 * follower records one.
 */
const AHEAD_TRANSACTIONS = 2_000;

/** The next run's length (or, for `transactions` of AHEAD_TRANSACTIONS, how far to ask ahead), from the transactions per block of the last run: between 1 and `max` blocks. */
export function blocksPerRun(last: BlockData[], max: number, transactions = RUN_TRANSACTIONS): number {
  const inLast = last.reduce((total, { block }) => total + block.transactions.length, 0);
  return Math.max(1, Math.min(max, Math.floor((transactions * Math.max(1, last.length)) / Math.max(1, inLast))));
}
/** Failures in a row, for a reason that is not transient, after which a block is quarantined (docs/chain-follower.md). */
export const QUARANTINE_AFTER_ATTEMPTS = 5;
/**
 * Failures in a row to fetch the same block, for any reason, while the node answers, after which it is quarantined:
 * with the follow loop's growing pause, about half a minute (docs/chain-follower.md).
 */
export const UNREADABLE_AFTER_ATTEMPTS = 8;

/** A backfill's share of a follower's work: one webhook's notifications, marked with the backfill's id. */
export interface BackfillScope {
  account: string;
  webhookId: string;
  backfillId: string;
}

export interface StepResult {
  /** The head's number minus the checkpoint's: 0 when caught up. */
  lag: number;
  /** The chain's head as the node answered. */
  head: number;
  /** Whether every block deep enough has been taken: the next step can wait for a new block. */
  caughtUp: boolean;
  /** The checkpoint's block number after the step. */
  checkpoint: number;
  /** Blocks taken in this step. */
  blocks: number;
  notifications: number;
  /** Blocks quarantined in this step, when any. */
  quarantined?: number;
  /** Transactions of the blocks taken whose trace the node could not give, when any: notified without their internal transactions. */
  tracesOmitted?: number;
}

export class ChainFollower {
  /** Where its blocks come from, traced when wanted: the node, and the next blocks asked for while the last are recorded. */
  readonly blocks: BlockSource;
  private readonly tokens: TokenMetadataCache;
  /** The checkpoint as this follower last wrote it: while it holds the lease, nobody else moves it. */
  private checkpoint: Checkpoint | undefined;
  /** The block that failed last for a reason that is not transient, and how many times in a row (counted by this follower). */
  private failing: { hash: string; attempts: number } | undefined;
  /** The block after the checkpoint when it could not be fetched, and how many times in a row. */
  private unreadable: { number: number; attempts: number } | undefined;
  /**
   * Blocks taken in the next step while catching up, and asked for ahead of it, from the size of the
   * last blocks taken (blocksPerRun): one block until the first is seen, whose size is not known before.
   */
  private runBlocks = 1;
  private aheadBlocks = 1;

  constructor(
    readonly chain: ChainSettings,
    private readonly log: Logger,
    /** Where recorded notifications are queued. */
    private readonly queue: QueueSender,
    node?: ChainNode,
    /** Absent: while any active webhook on the chain asks for internal transactions (a backfill: while its webhook does). */
    tracesWanted?: TracesWanted,
  ) {
    this.blocks = new BlockSource(chain, node ?? new ChainNode(chain.rpcUrl, chain.traces), log, tracesWanted);
    this.tokens = new TokenMetadataCache(chain.chainId, this.node, log);
  }

  get node(): ChainNode {
    return this.blocks.node;
  }

  /**
   * One step: the checkpoint checked against the chain, then up to CATCH_UP_BATCH blocks taken. A
   * chain followed for the first time starts after its `firstCheckpoint`, by default its current
   * safe block: history before it is not notified.
   */
  async step(): Promise<StepResult> {
    let checkpoint = (this.checkpoint ??= await getCheckpoint(this.chain.chainId));
    const [head, checkpointHash] = await Promise.all([
      this.node.head(),
      checkpoint ? this.node.blockHashAt(checkpoint.number) : undefined,
    ]);
    await this.blocks.detectTracing();
    const safe = head - this.chain.confirmations;
    const idle = { lag: checkpoint ? Math.max(0, head - checkpoint.number) : 0, head, caughtUp: true, checkpoint: checkpoint?.number ?? safe, blocks: 0, notifications: 0 };
    if (safe < 0) return idle;
    if (!checkpoint) {
      const unhashed = await getUnhashedCheckpoint(this.chain.chainId);
      // An older follower's checkpoint without a hash: the blocks it took as `null` are taken again, and those after them.
      const number = unhashed ? Math.max(0, Math.min(safe, unhashed.number, ...unhashed.unhashed) - 1) : Math.min(safe, this.chain.firstCheckpoint ?? safe);
      const hash = await this.node.knownBlockHashAt(number);
      const first = { number, hash, recent: [{ number, hash }] };
      if (await moveCheckpoint(this.chain.chainId, undefined, first)) this.checkpoint = first;
      if (unhashed) this.log.warn('checkpoint stored without a block hash repaired: going on after the last block taken whole', { chainId: this.chain.chainId, stored: unhashed.number, after: number });
      else this.log.info('chain followed for the first time', { chainId: this.chain.chainId, after: number });
      return { ...idle, lag: head - number, caughtUp: number === safe, checkpoint: number };
    }
    if (checkpointHash !== checkpoint.hash) {
      // A node behind answers `null` for a block it has not seen yet: below its head, that is no fork.
      if (!checkpointHash && head >= checkpoint.number) throw new LaggingNodeError(`block ${checkpoint.number} is not known yet`);
      this.checkpoint = undefined;
      // Blocks asked for ahead may be of the chain as it was.
      this.blocks.forgetPrefetched();
      await this.rewind(checkpoint, checkpointHash, safe);
      return { ...idle, caughtUp: false };
    }
    const last = Math.min(safe, checkpoint.number + this.runBlocks);
    if (last <= checkpoint.number) return idle;
    const fetched = await this.blocks.blocksFrom(checkpoint.number + 1, last);
    // The blocks before the first that could not be fetched are taken; that one is first in the next step.
    const failedAt = fetched.findIndex((one) => one.status === 'rejected');
    const blocks = fetched.slice(0, failedAt < 0 ? undefined : failedAt).map((one) => (one as PromiseFulfilledResult<BlockData>).value);
    if (blocks.length > 0) [this.runBlocks, this.aheadBlocks] = [blocksPerRun(blocks, CATCH_UP_BATCH), blocksPerRun(blocks, CATCH_UP_BATCH, AHEAD_TRANSACTIONS)];
    // While catching up, the next blocks are fetched while these are matched and recorded.
    if (last < safe && failedAt < 0) this.blocks.prefetch(last + 1, Math.min(safe, last + this.aheadBlocks));
    const result: StepResult = { lag: 0, head, caughtUp: false, checkpoint: checkpoint.number, blocks: 0, notifications: 0 };
    if (blocks.length > 0 && this.unreadable?.number === checkpoint.number + 1) this.unreadable = undefined;
    // The run of fetched blocks that extends the checkpoint: a fork under them is found by the next step.
    const chained: BlockData[] = [];
    for (const data of blocks) {
      if (data.block.parentHash !== (chained.at(-1)?.block.hash ?? checkpoint.hash)) break;
      chained.push(data);
    }
    let taken: BlockRef[] = [];
    if (failedAt === 0) taken = [await this.unreadableBlock(checkpoint.number + 1, (fetched[0] as PromiseRejectedResult).reason, result)];
    else if (chained.length > 0) {
      const done = await this.takeOrQuarantine(chained, result);
      taken = chained.slice(0, done).map(({ block }) => ({ number: Number(block.number), hash: block.hash }));
    }
    this.blocks.countUntraced(chained.slice(0, taken.length), result);
    if (taken.length > 0) {
      const next: Checkpoint = { ...taken.at(-1)!, recent: [...checkpoint.recent, ...taken].slice(-RECENT_BLOCKS_KEPT) };
      if (!(await moveCheckpoint(this.chain.chainId, checkpoint, next))) {
        this.log.warn('another follower moved the checkpoint; this one reads it again', { chainId: this.chain.chainId });
        this.checkpoint = undefined;
        return result;
      }
      checkpoint = this.checkpoint = next;
      result.blocks = taken.length;
    }
    result.lag = Math.max(0, head - checkpoint.number);
    result.checkpoint = checkpoint.number;
    result.caughtUp = checkpoint.number >= safe;
    return result;
  }

  /**
   * Takes the blocks at once; after a failure that asking again does not fix, one by one, so that
   * the block that fails is found and the others are taken. A block that fails so
   * QUARANTINE_AFTER_ATTEMPTS times in a row is quarantined, which counts as taken. Returns how many
   * of the blocks, from the first, are done; throws when the first is not. With `backfill`, only its
   * webhook's notifications are taken, and quarantined.
   */
  async takeOrQuarantine(blocks: BlockData[], result: Pick<StepResult, 'notifications' | 'quarantined'>, backfill?: BackfillScope): Promise<number> {
    const only = backfill && new Set([backfill.webhookId]);
    if (!this.failing || blocks.length === 1) {
      try {
        result.notifications += await this.take(blocks, only, backfill);
        this.failing = undefined;
        return blocks.length;
      } catch (error) {
        if (isTransientFault(error)) throw error;
        if (blocks.length === 1) return this.failed(blocks[0]!, error, result, backfill).then(() => 1);
      }
    }
    for (const [index, data] of blocks.entries()) {
      try {
        result.notifications += await this.take([data], only, backfill);
        if (this.failing?.hash === data.block.hash) this.failing = undefined;
      } catch (error) {
        try {
          if (isTransientFault(error)) throw error;
          await this.failed(data, error, result, backfill);
        } catch (failure) {
          if (index === 0) throw failure;
          // The blocks before it are done; the next step starts at it.
          return index;
        }
      }
    }
    return blocks.length;
  }

  /**
   * Counts a failure of the block: throws the error, or once it has failed QUARANTINE_AFTER_ATTEMPTS
   * times, quarantines it: only the webhooks that failed when the others were recorded (WebhooksFailed),
   * or a backfill's webhook, else the whole block.
   */
  private async failed(data: BlockData, error: unknown, result: Pick<StepResult, 'quarantined'>, backfill?: BackfillScope): Promise<void> {
    const { hash } = data.block;
    const attempts = (this.failing?.hash === hash ? this.failing.attempts : 0) + 1;
    this.failing = { hash, attempts };
    const reason = describeFault(error, this.chain.rpcUrl);
    const details = { chainId: this.chain.chainId, block: Number(data.block.number), hash, attempts, error: reason };
    if (attempts < QUARANTINE_AFTER_ATTEMPTS) {
      this.log.warn('block failed; taken again, and quarantined if it goes on failing', { ...details, quarantinedAfter: QUARANTINE_AFTER_ATTEMPTS });
      throw error;
    }
    const record = { number: details.block, hash, reason, attempts, quarantinedAt: Date.now() };
    this.failing = undefined;
    result.quarantined = (result.quarantined ?? 0) + 1;
    if (backfill) {
      const { account, webhookId, backfillId } = backfill;
      await putQuarantinedBlock(this.chain.chainId, { ...record, webhookId, account });
      this.log.error("a backfill's notifications of a block quarantined for its webhook: recorded once an operator retakes the block; the backfill goes on", { ...details, webhookId, backfillId });
      return;
    }
    if (error instanceof WebhooksFailed) {
      // The block's other webhooks are notified; only these wait for a retake.
      const records = error.failures.map(({ match, error: cause }) => ({ ...record, reason: describeFault(cause, this.chain.rpcUrl), webhookId: match.webhook.id, account: match.account }));
      await Promise.all(records.map((webhookRecord) => putQuarantinedBlock(this.chain.chainId, webhookRecord)));
      this.log.error("webhooks' notifications of a block quarantined: recorded once an operator retakes the block", { ...details, webhookIds: records.map(({ webhookId }) => webhookId) });
      return;
    }
    await putQuarantinedBlock(this.chain.chainId, record);
    this.log.error('block quarantined: its notifications are not recorded until an operator retakes it', details);
  }

  /**
   * Counts a failure to fetch the block after the checkpoint while the node answers (its head), with
   * an answer rather than being behind, slow or down (isNodeUnavailable: never counted): throws
   * the error, or, once the block has failed so UNREADABLE_AFTER_ATTEMPTS times in a row, quarantines
   * it (a node failing on one block's receipts every time, say) and returns it as taken.
   */
  private async unreadableBlock(number: number, error: unknown, result: StepResult): Promise<BlockRef> {
    if (isNodeUnavailable(error)) throw error;
    const attempts = (this.unreadable?.number === number ? this.unreadable.attempts : 0) + 1;
    this.unreadable = { number, attempts };
    const reason = describeFault(error, this.chain.rpcUrl);
    const details = { chainId: this.chain.chainId, block: number, attempts, error: reason };
    if (attempts < UNREADABLE_AFTER_ATTEMPTS) {
      this.log.warn('block could not be fetched; asked again, and quarantined if it goes on failing', { ...details, quarantinedAfter: UNREADABLE_AFTER_ATTEMPTS });
      throw error;
    }
    const hash = await this.node.knownBlockHashAt(number);
    await putQuarantinedBlock(this.chain.chainId, { number, hash, reason, attempts, quarantinedAt: Date.now() });
    this.unreadable = undefined;
    result.quarantined = (result.quarantined ?? 0) + 1;
    this.log.error('block quarantined: its notifications are not recorded until an operator retakes it', { ...details, hash });
    return { number, hash };
  }

  /**
   * Records the notifications of a run of blocks (of the webhooks `onlyWebhooks` names, when given);
   * returns how many (recorded now or before). Every webhook's are recorded whatever another's do:
   * those that failed are thrown as WebhooksFailed. A backfill's (`backfill`: one webhook's) are
   * marked with its id and recorded in block order, none after one that fails.
   */
  async take(taken: BlockData[], onlyWebhooks?: ReadonlySet<string>, backfill?: { backfillId: string }): Promise<number> {
    // The watchers the matcher read are saved for next time beside the recording, and awaited with it.
    const saves: Promise<void>[] = [];
    try {
      return await this.record(taken, saves, onlyWebhooks, backfill);
    } finally {
      await Promise.all(saves);
    }
  }

  private async record(taken: BlockData[], saves: Promise<void>[], onlyWebhooks?: ReadonlySet<string>, backfill?: { backfillId: string }): Promise<number> {
    let blocks = taken;
    let { matches, saved } = await matchBlocks(this.chain.chainId, blocks);
    saves.push(saved);
    // Fetched untraced while the index of webhooks that want traces (eventually consistent on AWS)
    // did not show one yet: a block that notifies one is fetched again with its traces, and matched again.
    const untraced = blocks.flatMap((data, index) => (!data.traces && matches[index]!.some(({ webhook }) => webhook.includeInternalTxs) ? [index] : []));
    if (untraced.length > 0) {
      blocks = await this.blocks.withTraces(blocks, untraced);
      if (blocks !== taken) {
        ({ matches, saved } = await matchBlocks(this.chain.chainId, blocks));
        saves.push(saved);
      }
    }
    const work = matches.flatMap((blockMatches, index) =>
      blockMatches.filter((match) => !onlyWebhooks || onlyWebhooks.has(match.webhook.id)).map((match) => ({ data: blocks[index]!, match })),
    );
    if (work.length === 0) return 0;
    await this.tokens.load(work.flatMap(({ data, match }) => match.transactionIndexes.flatMap((index) => tokenAddressesOf(data, index))));
    const notifications = new BlockNotifications(this.chain, this.tokens.lookup, this.log);
    let recorded = 0;
    const failures: WebhooksFailed['failures'] = [];
    if (backfill) {
      const { data, match } = work[0]!;
      try {
        const made = work.flatMap((item) => notifications.of(item.data, item.match)).map((notification) => ({ ...notification, backfillId: backfill.backfillId }));
        recorded += (await recordNotifications(match.account, match.webhook.id, made, this.queue, originOf(match.webhook.url), true)).length;
      } catch (error) {
        failures.push({ data, match, error });
      }
    } else {
      const webhooks = work.map(({ data, match }) => ({ account: match.account, webhookId: match.webhook.id, notifications: notifications.of(data, match), origin: originOf(match.webhook.url) }));
      const recordings = await recordWebhooksNotifications(webhooks, this.queue);
      recordings.forEach((recording, index) => {
        if ('error' in recording) failures.push({ ...work[index]!, error: recording.error });
        else recorded += recording.ids.length;
      });
    }
    if (failures.length > 0) throw new WebhooksFailed(failures, isTransientFault);
    return recorded;
  }

  /**
   * The checkpoint's block is no longer the chain's (a reorganisation, or a dev chain that came back
   * behind after a crash): back to the newest recent block the chain still has, from where the new
   * blocks are taken. Notifications already sent for the dropped blocks stay sent.
   */
  private async rewind(checkpoint: Checkpoint, checkpointHash: string | undefined, safe: number): Promise<void> {
    const candidates = checkpoint.recent.filter((block) => block.number <= safe).reverse();
    const hashes = await Promise.all(candidates.map((block) => this.node.blockHashAt(block.number)));
    const commonIndex = candidates.findIndex((block, index) => hashes[index] === block.hash);
    const common = candidates[commonIndex];
    // A block the node answers `null` for is one it has not seen yet, not a different one: only a
    // different hash shows a fork, and the fork point is not known while a newer block is unknown.
    const newer = common ? hashes.slice(0, commonIndex) : hashes;
    if (!common && newer.includes(undefined)) throw new LaggingNodeError(`blocks before ${checkpoint.number} are not all known yet`);
    if (!checkpointHash && newer.every((hash) => !hash)) throw new LaggingNodeError(`the node is behind block ${checkpoint.number}`);
    if (common?.number === checkpoint.number) return;
    let to: BlockRef;
    if (common) to = common;
    else {
      const number = Math.min(safe, checkpoint.recent[0]?.number ?? safe);
      to = { number, hash: await this.node.knownBlockHashAt(number) };
      this.log.error('reorganisation deeper than the blocks kept; going on from the chain as it is', { chainId: this.chain.chainId, block: number });
    }
    const recent = checkpoint.recent.filter((block) => block.number <= to.number);
    if (await moveCheckpoint(this.chain.chainId, checkpoint, { ...to, recent: common ? recent : [to] })) {
      this.log.warn('reorganisation: going back to the common block', { chainId: this.chain.chainId, from: checkpoint.number, to: to.number, depth: checkpoint.number - to.number });
    }
  }
}
