import { createClient, http, TimeoutError, type Client } from 'viem';
import { getBlockNumber } from 'viem/actions';
import type { ChainTraces, TraceMethod } from '../config/chains';
// A cycle (faults.ts knows LaggingNodeError): each uses the other only inside functions, never at load.
import { causes, isMethodUnserved } from './faults';
import type { BlockData, CallFrame, Hex, RpcBlock, RpcReceipt } from './rpc-types';
import { detectTraceMethod, traceBlock, tracerOf, type BlockTracer, type TimedRequest } from './traces';

/** The node is behind or inconsistent about a block (missing receipts or traces): ask again later, never skip it. */
export class LaggingNodeError extends Error {
  override readonly name = 'LaggingNodeError';
}

/** A request about no more than one block's header: the head, a hash, a block. */
const REQUEST_TIMEOUT_MS = 20_000;
/** The longest a request sized to its block may take (a trace of tens of thousands of transactions). */
const SIZED_REQUEST_MAX_MS = 300_000;
/** A block's receipts: the node reads (anvil: computes) one per transaction. */
const receiptsTimeoutMs = (transactions: number) => REQUEST_TIMEOUT_MS + 10 * transactions;

/**
 * A chain's node over JSON-RPC, with requests of one tick sent as one batch. Blocks stay in the
 * node's raw shape (see rpc-types). The RPC URL is never logged: providers put keys in it.
 */
export class ChainNode {
  readonly client: Client;
  /** For requests whose timeout is sized to their block (each passes its own): receipts, traces. */
  private readonly sizedClient: Client;
  /** Unknown until the first block: whether the node has `eth_getBlockReceipts`. */
  private blockReceipts: boolean | undefined;
  private detected: TraceMethod | undefined;
  private detecting: Promise<TraceMethod> | undefined;

  constructor(
    rpcUrl: string,
    /** How the node's traces are had: `auto` finds out (detectTraceMethod). */
    private readonly traces: ChainTraces,
    /** Awaited before each request: a backfill's pacing. */
    private readonly beforeRequest?: () => Promise<void>,
  ) {
    const batch = { batchSize: 100, wait: 0 };
    this.client = createClient({ transport: http(rpcUrl, { batch, retryCount: 2, timeout: REQUEST_TIMEOUT_MS }) });
    this.sizedClient = createClient({ transport: http(rpcUrl, { batch, retryCount: 0, timeout: SIZED_REQUEST_MAX_MS }) });
  }

  /** The method this node's traces are asked by: unknown (undefined) until detectTraceMethod has found it. */
  get traceMethod(): TraceMethod | undefined {
    return this.traces === 'auto' ? this.detected : this.traces;
  }

  /** Finds, once, which tracing method the node serves (CHAIN_TRACES may have said it); throws when the node cannot be asked, to be asked again. */
  async detectTraceMethod(): Promise<TraceMethod> {
    const known = this.traceMethod;
    if (known) return known;
    this.detecting ??= detectTraceMethod(this.timedRequest).then(
      (method) => (this.detected = method),
      (error: unknown) => {
        this.detecting = undefined;
        throw error;
      },
    );
    return this.detecting;
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
   * The block at `number` with its transactions, receipts and, when `traces` asks and the node serves
   * them, traces, the last two fetched by the block's hash (a trace_block by number is checked
   * against it), so that all three describe one block even when the chain reorganises meanwhile.
   */
  async blockAt(number: number, { traces: traced }: { traces: boolean }): Promise<BlockData> {
    const block = await this.request<RpcBlock | null>('eth_getBlockByNumber', [toQuantity(number), true]);
    if (!block) throw new LaggingNodeError(`block ${number} is not known yet`);
    const tracer = traced && block.transactions.length > 0 ? tracerOf(await this.detectTraceMethod()) : undefined;
    const [receipts, traces] = await Promise.all([this.receiptsOf(block), tracer && this.tracesOf(tracer, block)]);
    if (receipts.length !== block.transactions.length || receipts.some((receipt, index) => receipt.transactionHash !== block.transactions[index]!.hash)) {
      throw new LaggingNodeError(`block ${number} (${block.hash}): ${receipts.length} receipts for ${block.transactions.length} transactions`);
    }
    if (!traces) return { block, receipts };
    return { block, receipts, traces: tracer?.withReceipts?.(traces, block, receipts) ?? traces };
  }

  /** A method the node was found to serve and now says it does not (a load balancer's other backend): found again at the next block. */
  private async tracesOf(tracer: BlockTracer, block: RpcBlock): Promise<(CallFrame | null)[]> {
    const found = this.traces === 'auto';
    try {
      return await traceBlock(tracer, this.timedRequest, block, { unservedThrows: found });
    } catch (error) {
      if (found && isMethodUnserved(error)) this.detected = this.detecting = undefined;
      throw error;
    }
  }

  private async receiptsOf(block: RpcBlock): Promise<RpcReceipt[]> {
    if (block.transactions.length === 0) return [];
    const timeoutMs = receiptsTimeoutMs(block.transactions.length);
    if (this.blockReceipts !== false) {
      try {
        const receipts = await this.sizedRequest<RpcReceipt[] | null>('eth_getBlockReceipts', [block.hash], timeoutMs);
        this.blockReceipts = true;
        if (!receipts) throw new LaggingNodeError(`no receipts yet for block ${block.hash}`);
        return receipts;
      } catch (error) {
        if (!isMethodUnserved(error)) throw error;
        this.blockReceipts = false;
      }
    }
    // One signal for them all: viem batches only requests that share theirs.
    const signal = AbortSignal.timeout(timeoutMs);
    const receipts = await Promise.all(
      block.transactions.map((transaction) => this.sizedRequest<RpcReceipt | null>('eth_getTransactionReceipt', [transaction.hash], timeoutMs, signal)),
    );
    if (receipts.some((receipt) => !receipt || receipt.blockHash !== block.hash)) throw new LaggingNodeError(`receipts of block ${block.hash} are not all known yet`);
    return receipts as RpcReceipt[];
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

  private readonly timedRequest: TimedRequest = (method, params, timeoutMs) => this.sizedRequest(method, params, timeoutMs);

  /** A request given `timeoutMs` (or `signal`, shared by requests to be batched together), not retried: the caller knows what to do instead. */
  private async sizedRequest<T>(method: string, params: unknown[], timeoutMs: number, signal = AbortSignal.timeout(timeoutMs)): Promise<T> {
    await this.beforeRequest?.();
    try {
      return (await this.sizedClient.request({ method, params } as never, { signal })) as T;
    } catch (error) {
      // viem's own timeout error, so that it is told apart from the node's errors as any timeout is (faults.ts).
      if (signal.aborted) throw new TimeoutError({ body: { method }, url: 'the node' });
      if (isUnknownBlock(error)) throw new LaggingNodeError(`${method}: the node does not know the block yet`, { cause: error });
      throw error;
    }
  }
}

export const toQuantity = (value: number | bigint) => `0x${value.toString(16)}` as Hex;


/** geth's and its forks' error for a block a node behind has not seen yet. */
function isUnknownBlock(error: unknown): boolean {
  return causes(error).some((cause) => /header not found|unknown block/i.test(cause.details ?? cause.message ?? ''));
}
