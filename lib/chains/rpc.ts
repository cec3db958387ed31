import { createClient, http, type Client } from 'viem';
import { getBlockNumber } from 'viem/actions';
// A cycle (faults.ts knows LaggingNodeError): each uses the other only inside functions, never at load.
import { causes } from './faults';
import type { BlockData, CallFrame, Hex, RpcBlock, RpcReceipt } from './rpc-types';

/** The node is behind or inconsistent about a block (missing receipts or traces): ask again later, never skip it. */
export class LaggingNodeError extends Error {
  override readonly name = 'LaggingNodeError';
}

const METHOD_NOT_FOUND = -32601;

/**
 * A chain's node over JSON-RPC, with requests of one tick sent as one batch. Blocks stay in the
 * node's raw shape (see rpc-types). The RPC URL is never logged: providers put keys in it.
 */
export class ChainNode {
  readonly client: Client;
  /** Unknown until the first block: whether the node has `eth_getBlockReceipts`. */
  private blockReceipts: boolean | undefined;

  constructor(
    rpcUrl: string,
    private readonly traces: boolean,
    /** Awaited before each request: a backfill's pacing. */
    private readonly beforeRequest?: () => Promise<void>,
  ) {
    this.client = createClient({
      transport: http(rpcUrl, { batch: { batchSize: 100, wait: 0 }, retryCount: 2, timeout: 20_000 }),
    });
  }

  async head(): Promise<number> {
    return Number(await getBlockNumber(this.client, { cacheTime: 0 }));
  }

  /** The hash of the block at `number`; none from a node that has not seen it yet (a node behind answers `null`). */
  async blockHashAt(number: number): Promise<Hex | undefined> {
    const block = await this.request<RpcBlock | null>('eth_getBlockByNumber', [toQuantity(number), false]);
    return block?.hash;
  }

  /** The hash of a block that must exist (the follower's first checkpoint): a node that answers `null` is behind, asked again later. */
  async knownBlockHashAt(number: number): Promise<Hex> {
    const hash = await this.blockHashAt(number);
    if (!hash) throw new LaggingNodeError(`block ${number} is not known yet`);
    return hash;
  }

  /**
   * The block at `number` with its transactions, receipts and (when the chain serves them) traces,
   * the last two fetched by the block's hash, so that all three describe one block even when the
   * chain reorganises meanwhile.
   */
  async blockAt(number: number): Promise<BlockData> {
    const block = await this.request<RpcBlock | null>('eth_getBlockByNumber', [toQuantity(number), true]);
    if (!block) throw new LaggingNodeError(`block ${number} is not known yet`);
    const [receipts, traces] = await Promise.all([this.receiptsOf(block), this.traces ? this.tracesOf(block) : undefined]);
    if (receipts.length !== block.transactions.length || receipts.some((receipt, index) => receipt.transactionHash !== block.transactions[index]!.hash)) {
      throw new LaggingNodeError(`block ${number} (${block.hash}): ${receipts.length} receipts for ${block.transactions.length} transactions`);
    }
    if (traces && traces.length !== block.transactions.length) {
      throw new LaggingNodeError(`block ${number} (${block.hash}): ${traces.length} traces for ${block.transactions.length} transactions`);
    }
    return { block, receipts, traces };
  }

  private async receiptsOf(block: RpcBlock): Promise<RpcReceipt[]> {
    if (block.transactions.length === 0) return [];
    if (this.blockReceipts !== false) {
      try {
        const receipts = await this.request<RpcReceipt[] | null>('eth_getBlockReceipts', [block.hash]);
        this.blockReceipts = true;
        if (!receipts) throw new LaggingNodeError(`no receipts yet for block ${block.hash}`);
        return receipts;
      } catch (error) {
        if (!isMethodNotFound(error)) throw error;
        this.blockReceipts = false;
      }
    }
    const receipts = await Promise.all(
      block.transactions.map((transaction) => this.request<RpcReceipt | null>('eth_getTransactionReceipt', [transaction.hash])),
    );
    if (receipts.some((receipt) => !receipt || receipt.blockHash !== block.hash)) throw new LaggingNodeError(`receipts of block ${block.hash} are not all known yet`);
    return receipts as RpcReceipt[];
  }

  /** `null` for a transaction whose trace failed (geth answers `{txHash, error}`: a tracer timeout, say): it fails the same way when asked again. */
  private async tracesOf(block: RpcBlock): Promise<(CallFrame | null)[]> {
    if (block.transactions.length === 0) return [];
    const traces = await this.request<{ result?: CallFrame; error?: unknown }[] | null>('debug_traceBlockByHash', [block.hash, { tracer: 'callTracer' }]);
    if (!traces || traces.some((trace) => !trace.result && !trace.error)) throw new LaggingNodeError(`traces of block ${block.hash} are not all known yet`);
    return traces.map((trace) => trace.result ?? null);
  }

  async request<T>(method: string, params: unknown[]): Promise<T> {
    await this.beforeRequest?.();
    try {
      return (await this.client.request({ method, params } as never)) as T;
    } catch (error) {
      if (isUnknownBlock(error)) throw new LaggingNodeError(`${method}: the node does not know the block yet`, { cause: error });
      throw error;
    }
  }
}

export const toQuantity = (value: number | bigint) => `0x${value.toString(16)}` as Hex;

function isMethodNotFound(error: unknown): boolean {
  return causes(error).some((cause) => cause.code === METHOD_NOT_FOUND);
}

/** geth's and its forks' error for a block a node behind has not seen yet. */
function isUnknownBlock(error: unknown): boolean {
  return causes(error).some((cause) => /header not found|unknown block/i.test(cause.details ?? cause.message ?? ''));
}
