/**
 * The chain follower: takes each block once it is `confirmations` deep, in order, checks that it
 * extends the last one taken (else walks back to where the chain forked and goes on from there),
 * records the notifications its transactions make, and only then moves the chain's checkpoint. A
 * crash anywhere makes the next follower take the last step's blocks again (one block at the head;
 * up to CATCH_UP_BATCH while catching up), and since message ids are derived from the webhook, chain,
 * block and transaction, recording them again records nothing new.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ChainSettings } from '../config/chains';
import { recordNotifications } from '../deliveries/messages';
import { inChunks } from '../store/batch';
import { getCheckpoint, moveCheckpoint, RECENT_BLOCKS_KEPT, type BlockRef, type Checkpoint } from '../store/chains';
import { deterministicUuid } from '../uuid';
import { matchBlocks, type WebhookMatch } from './matcher';
import { buildAddressActivityEvent, tokenAddressesOf } from './payload';
import { ChainNode } from './rpc';
import type { BlockData } from './rpc-types';
import { TokenMetadataCache } from './tokens';

/** Blocks fetched, matched and checkpointed at once while catching up (their requests go in JSON-RPC batches). */
export const CATCH_UP_BATCH = 50;
const WEBHOOKS_RECORDED_IN_PARALLEL = 8;

export interface StepResult {
  /** The head's number minus the checkpoint's: 0 when caught up. */
  lag: number;
  /** Whether every block deep enough has been taken: the next step can wait for a new block. */
  caughtUp: boolean;
  /** The checkpoint's block number after the step. */
  checkpoint: number;
  /** Blocks taken in this step. */
  blocks: number;
  notifications: number;
}

export class ChainFollower {
  readonly node: ChainNode;
  private readonly tokens: TokenMetadataCache;
  /** The checkpoint as this follower last wrote it: while it holds the lease, nobody else moves it. */
  private checkpoint: Checkpoint | undefined;
  /** The next blocks, asked for while the last ones were being recorded. */
  private prefetched: { first: number; last: number; blocks: Promise<BlockData[]> } | undefined;

  constructor(readonly chain: ChainSettings, private readonly log: Logger) {
    this.node = new ChainNode(chain.rpcUrl, chain.traces);
    this.tokens = new TokenMetadataCache(chain.chainId, this.node);
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
    const safe = head - this.chain.confirmations;
    const idle = { lag: checkpoint ? Math.max(0, head - checkpoint.number) : 0, caughtUp: true, checkpoint: checkpoint?.number ?? safe, blocks: 0, notifications: 0 };
    if (safe < 0) return idle;
    if (!checkpoint) {
      const number = Math.min(safe, this.chain.firstCheckpoint ?? safe);
      const hash = (await this.node.blockHashAt(number))!;
      const first = { number, hash, recent: [{ number, hash }] };
      if (await moveCheckpoint(this.chain.chainId, undefined, first)) this.checkpoint = first;
      this.log.info('chain followed for the first time', { chainId: this.chain.chainId, after: number });
      return { ...idle, lag: head - number, caughtUp: number === safe, checkpoint: number };
    }
    if (checkpointHash !== checkpoint.hash) {
      this.checkpoint = undefined;
      await this.rewind(checkpoint, safe);
      return { ...idle, caughtUp: false };
    }
    const last = Math.min(safe, checkpoint.number + CATCH_UP_BATCH);
    if (last <= checkpoint.number) return idle;
    const blocks = await this.blocksFrom(checkpoint.number + 1, last);
    // While catching up, the next blocks are fetched while these are matched and recorded.
    if (last < safe) this.prefetch(last + 1, Math.min(safe, last + CATCH_UP_BATCH));
    const result: StepResult = { lag: 0, caughtUp: false, checkpoint: checkpoint.number, blocks: 0, notifications: 0 };
    // The run of fetched blocks that extends the checkpoint: a fork under them is found by the next step.
    const chained: BlockData[] = [];
    for (const data of blocks) {
      if (data.block.parentHash !== (chained.at(-1)?.block.hash ?? checkpoint.hash)) break;
      chained.push(data);
    }
    if (chained.length > 0) {
      result.notifications = await this.take(chained);
      const taken = chained.map(({ block }) => ({ number: Number(block.number), hash: block.hash }));
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

  private prefetch(first: number, last: number) {
    const blocks = this.fetchBlocks(first, last);
    blocks.catch(() => undefined); // a failure surfaces where the blocks are awaited, if they are
    this.prefetched = { first, last, blocks };
  }

  private blocksFrom(first: number, last: number): Promise<BlockData[]> {
    const prefetched = this.prefetched;
    this.prefetched = undefined;
    return prefetched?.first === first && prefetched.last === last ? prefetched.blocks : this.fetchBlocks(first, last);
  }

  private fetchBlocks(first: number, last: number): Promise<BlockData[]> {
    return Promise.all(Array.from({ length: last - first + 1 }, (_, index) => this.node.blockAt(first + index)));
  }

  /** Records the notifications of a run of blocks; returns how many (recorded now or before). */
  async take(blocks: BlockData[]): Promise<number> {
    const { matches } = await matchBlocks(this.chain.chainId, blocks);
    const work = matches.flatMap((blockMatches, index) => blockMatches.map((match) => ({ data: blocks[index]!, match })));
    if (work.length === 0) return 0;
    await this.tokens.load(work.flatMap(({ data, match }) => match.transactionIndexes.flatMap((index) => tokenAddressesOf(data, index))));
    let recorded = 0;
    await inChunks(work, 1, WEBHOOKS_RECORDED_IN_PARALLEL, async ([item]) => {
      const { data, match } = item!;
      recorded += (await recordNotifications(match.account, match.webhook.id, this.notificationsOf(data, match))).length;
    });
    return recorded;
  }

  private notificationsOf(data: BlockData, { webhook, transactionIndexes }: WebhookMatch) {
    const blockTimeMs = Number(data.block.timestamp) * 1000;
    const notifications = [];
    for (const transactionIndex of transactionIndexes) {
      const event = buildAddressActivityEvent({
        chainId: this.chain.chainId,
        data,
        transactionIndex,
        tokens: this.tokens.lookup,
        networkToken: this.chain.networkToken,
        includeLogs: webhook.includeLogs,
        includeInternalTxs: webhook.includeInternalTxs,
      });
      const messageId = deterministicUuid(blockTimeMs, [webhook.id, this.chain.chainId, data.block.hash, data.block.transactions[transactionIndex]!.hash]);
      notifications.push({ eventType: webhook.eventType, event, messageId });
    }
    return notifications;
  }

  /**
   * The checkpoint's block is no longer the chain's (a reorganisation, or a dev chain that came back
   * behind after a crash): back to the newest recent block the chain still has, from where the new
   * blocks are taken. Notifications already sent for the dropped blocks stay sent.
   */
  private async rewind(checkpoint: Checkpoint, safe: number): Promise<void> {
    const candidates = checkpoint.recent.filter((block) => block.number <= safe).reverse();
    const hashes = await Promise.all(candidates.map((block) => this.node.blockHashAt(block.number)));
    const common = candidates.find((block, index) => hashes[index] === block.hash);
    let to: BlockRef;
    if (common) to = common;
    else {
      const number = Math.min(safe, checkpoint.recent[0]?.number ?? safe);
      to = { number, hash: (await this.node.blockHashAt(number))! };
      this.log.error('reorganisation deeper than the blocks kept; going on from the chain as it is', { chainId: this.chain.chainId, block: number });
    }
    const recent = checkpoint.recent.filter((block) => block.number <= to.number);
    if (await moveCheckpoint(this.chain.chainId, checkpoint, { ...to, recent: common ? recent : [to] })) {
      this.log.warn('reorganisation: going back to the common block', { chainId: this.chain.chainId, from: checkpoint.number, to: to.number, depth: checkpoint.number - to.number });
    }
  }
}
