/**
 * Where a follower's blocks come from: its node, each block traced while a webhook wants internal
 * transactions (lib/chains/traces.ts), the next blocks asked for while the last are recorded, and
 * the transactions the node could not trace counted.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ChainSettings } from '../config/chains';
import { chainHasInternalTxWebhooks } from '../store/webhooks';
import { describeFault } from './faults';
import type { StepResult } from './follower';
import { LaggingNodeError, type ChainNode } from './rpc';
import type { BlockData } from './rpc-types';

/** Whether the blocks about to be fetched are to be traced: an active webhook on the chain asks for internal transactions. */
export type TracesWanted = () => Promise<boolean>;

/** Transaction hashes named in the log line of a block notified without some of its traces. */
const UNTRACED_LOGGED = 5;

export class BlockSource {
  /** Blocks asked for ahead, while the last ones were being recorded, by number: each with whether it was asked for traced. */
  private readonly ahead = new Map<number, { traced: Promise<boolean>; block: Promise<PromiseSettledResult<BlockData>> }>();
  private readonly tracesWanted: TracesWanted;

  constructor(
    private readonly chain: ChainSettings,
    readonly node: ChainNode,
    private readonly log: Logger,
    /** Absent: while any active webhook on the chain asks for internal transactions (a backfill: while its webhook does). */
    tracesWanted?: TracesWanted,
  ) {
    const wanted = tracesWanted ?? (() => chainHasInternalTxWebhooks(chain.chainId));
    // A store that cannot say: traced, so that no internal transaction is missed.
    this.tracesWanted = chain.traces === 'off' ? async () => false : () => wanted().catch(() => true);
  }

  /**
   * Finds out, once, which tracing method the node serves, and says so. A node that cannot be asked
   * now is asked again at the next step, and by the first block to be traced.
   */
  async detectTracing(): Promise<void> {
    if (this.node.traceMethod !== undefined) return;
    try {
      const method = await this.node.detectTraceMethod();
      const details = { chainId: this.chain.chainId, traceMethod: method, setting: this.chain.traces };
      if (method === 'off') this.log.warn('the node serves no tracing method: internal transactions are not notified on this chain', details);
      else this.log.info('chain traced by its fastest method the node serves, when a webhook asks for internal transactions', details);
    } catch (error) {
      // The step that follows fails the same way, and the follow loop says so once.
      this.log.debug('tracing method not found yet: the node did not answer; asked again', { chainId: this.chain.chainId, error: describeFault(error, this.chain.rpcUrl) });
    }
  }

  /**
   * Asks for the blocks from `first` to `last` not asked for yet, for the next `blocksFrom`s of them:
   * several runs ahead, so that the node works on them at once while the follower records a run.
   */
  prefetch(first: number, last: number) {
    const traced = this.tracesWanted();
    for (let number = first; number <= last; number += 1) {
      if (!this.ahead.has(number)) this.ahead.set(number, { traced, block: traced.then((traces) => this.settledBlockAt(number, traces)) });
    }
  }

  /** Drops the blocks asked for ahead (a fork, a backfill moving on to another range): they are asked for again if wanted. */
  forgetPrefetched() {
    this.ahead.clear();
  }

  /**
   * The blocks from `first` to `last`, each fetched or failed: those asked for ahead, else asked for
   * now; traced when wanted now (blocks asked for untraced are asked for again once a webhook wants
   * traces). Each block asked for ahead is given once: a failed one is asked for again next time.
   */
  async blocksFrom(first: number, last: number): Promise<PromiseSettledResult<BlockData>[]> {
    const traced = await this.tracesWanted();
    for (const number of this.ahead.keys()) if (number < first) this.ahead.delete(number);
    const blocks = Array.from({ length: last - first + 1 }, async (_, index) => {
      const number = first + index;
      const early = this.ahead.get(number);
      this.ahead.delete(number);
      return early && (!traced || (await early.traced)) ? early.block : this.settledBlockAt(number, traced);
    });
    return Promise.all(blocks);
  }

  /** The block at `number`, traced when wanted: a quarantined block taken again. */
  async blockAt(number: number): Promise<BlockData> {
    return this.node.blockAt(number, { traces: await this.tracesWanted() });
  }

  private async settledBlockAt(number: number, traces: boolean): Promise<PromiseSettledResult<BlockData>> {
    const [settled] = await Promise.allSettled([this.node.blockAt(number, { traces })]);
    return settled!;
  }

  /** Counts (and logs) the transactions of blocks taken that are notified without their traces: the node could not give them. */
  countUntraced(blocks: BlockData[], result: Pick<StepResult, 'tracesOmitted'>): void {
    for (const { block, traces } of blocks) {
      const untraced = traces?.flatMap((trace, index) => (trace === null ? [block.transactions[index]!.hash] : [])) ?? [];
      if (untraced.length === 0) continue;
      result.tracesOmitted = (result.tracesOmitted ?? 0) + untraced.length;
      this.log.warn('transactions notified without their internal transactions: the node gave no trace of them', {
        chainId: this.chain.chainId,
        block: Number(block.number),
        hash: block.hash,
        untraced: untraced.length,
        transactions: untraced.slice(0, UNTRACED_LOGGED),
        traceMethod: this.node.traceMethod,
      });
    }
  }

  /**
   * The blocks at `indexes` fetched again with their traces (the same blocks: a node that has
   * another there now is behind); the blocks as they were when the node serves no traces.
   */
  async withTraces(blocks: BlockData[], indexes: number[]): Promise<BlockData[]> {
    if (this.chain.traces === 'off' || this.node.traceMethod === 'off') return blocks;
    const traced = [...blocks];
    for (const index of indexes) {
      const { block } = blocks[index]!;
      const again = await this.node.blockAt(Number(block.number), { traces: true });
      if (again.block.hash !== block.hash) throw new LaggingNodeError(`block ${Number(block.number)} is ${again.block.hash} at the node, not ${block.hash}`);
      traced[index] = again;
    }
    return traced;
  }
}
