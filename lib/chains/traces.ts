/**
 * Internal transactions: how a block's call trees are asked of its node. Nodes serve them by one of
 * two methods (the kinds below, registered in TRACERS, fastest first); which one is found at start
 * by asking (`detectTraceMethod`), or set by CHAIN_TRACES. A block whose trace fails or times out is
 * traced a transaction at a time; a transaction whose trace still cannot be had is `null`: notified
 * without its internal transactions, marked `omitted.internalTransactions` (docs/chain-follower.md).
 */
import type { TraceMethod } from '../config/chains';
import { isMethodUnserved, isNodeFailing, isTimeout } from './faults';
import type { CallFrame, Hex, RpcBlock, RpcReceipt } from './rpc-types';
import { callTracer } from './traces-call-tracer';
import { parityTracer } from './traces-parity';


/** A JSON-RPC call with a timeout of its own: the node's `request`. */
export type TimedRequest = <T>(method: string, params: unknown[], timeoutMs: number) => Promise<T>;

/** One kind of tracing: its block method, its per-transaction method, and how each answer becomes call trees. */
export interface BlockTracer {
  method: Exclude<TraceMethod, 'off'>;
  /** A cheap call that a node serving the method answers with a result or an error of its own, and one that does not with "method not found". */
  probe: { method: string; params: unknown[] };
  /** Per transaction, in block order; `null` for one the node answered without a trace of. */
  traceBlock(request: TimedRequest, block: RpcBlock, timeoutMs: number): Promise<(CallFrame | null)[]>;
  traceTransaction(request: TimedRequest, hash: Hex, timeoutMs: number): Promise<CallFrame | null>;
  /** The trees made to say what geth's callTracer says of the transaction's own call, once the receipts are known. */
  withReceipts?(traces: (CallFrame | null)[], block: RpcBlock, receipts: RpcReceipt[]): (CallFrame | null)[];
}

/** Fastest first: on anvil, a block of 1 000 transfers is traced in ~15 ms by trace_block and ~3 s by the callTracer. */
export const TRACERS: readonly BlockTracer[] = [parityTracer, callTracer];

export const tracerOf = (method: TraceMethod): BlockTracer | undefined => TRACERS.find((tracer) => tracer.method === method);

/** A block trace's time: sized to the block, since the node re-executes every transaction. */
export const blockTraceTimeoutMs = (transactions: number) => 10_000 + 5 * transactions;
const TRANSACTION_TRACE_TIMEOUT_MS = 10_000;
/** Tries of a transaction's trace that fails with an error (one that times out is not tried again). */
const TRANSACTION_TRACE_TRIES = 2;
const TRANSACTION_TRACES_IN_PARALLEL = 8;
/** Transactions' traces timing out one after another: the node hangs, and the block waits for it rather than go untraced. */
const TRANSACTION_TIMEOUTS_HUNG = TRANSACTION_TRACES_IN_PARALLEL;

/**
 * The first of TRACERS the node serves (it answers the probe with a result, or with an error of its
 * own about the probe's block); `off` when it serves none. Throws when the node cannot say now (down,
 * failing, rate-limiting, timing out): asked again later.
 */
export async function detectTraceMethod(request: TimedRequest): Promise<TraceMethod> {
  for (const tracer of TRACERS) {
    try {
      await request(tracer.probe.method, tracer.probe.params, TRANSACTION_TRACE_TIMEOUT_MS);
      return tracer.method;
    } catch (error) {
      if (isMethodUnserved(error)) continue;
      if (isNodeFailing(error) || isTimeout(error)) throw error;
      return tracer.method;
    }
  }
  return 'off';
}

/**
 * The block's call trees, one per transaction: the whole block at once, and those it did not give
 * (a timeout, an error, a transaction it could not trace) a transaction at a time. Throws when the
 * node is failing or behind (the block is asked again, as for any fetch), when transactions' traces
 * keep timing out (a node that hangs), and, with `unservedThrows`, when the node says it does not
 * serve the method (to be found again: a node behind a load balancer may have changed).
 */
export async function traceBlock(tracer: BlockTracer, request: TimedRequest, block: RpcBlock, { unservedThrows }: { unservedThrows: boolean }): Promise<(CallFrame | null)[]> {
  if (block.transactions.length === 0) return [];
  let traces: (CallFrame | null)[] = block.transactions.map(() => null);
  try {
    const answered = await tracer.traceBlock(request, block, blockTraceTimeoutMs(block.transactions.length));
    if (answered.length === block.transactions.length) traces = answered;
  } catch (error) {
    if (isNodeFailing(error) || (unservedThrows && isMethodUnserved(error))) throw error;
  }
  const missing = [...traces.keys()].filter((index) => traces[index] === null);
  if (missing.length > 0) await traceEachTransaction(tracer, request, block, traces, missing);
  return traces;
}

/**
 * Traces the `missing` transactions one at a time, into `traces`, within about twice the block's
 * trace time: those still missing then stay `null`. Stops every worker and throws on a node failing,
 * and on a node that hangs: TRANSACTION_TIMEOUTS_HUNG timeouts in a row, or nothing but timeouts.
 */
async function traceEachTransaction(tracer: BlockTracer, request: TimedRequest, block: RpcBlock, traces: (CallFrame | null)[], missing: number[]): Promise<void> {
  const budgetEnds = Date.now() + 2 * blockTraceTimeoutMs(block.transactions.length);
  let next = 0;
  let timeoutsInARow = 0;
  let lastTimeout: unknown;
  let answered = false;
  let stopped = false;
  const worker = async () => {
    while (!stopped && next < missing.length && Date.now() < budgetEnds) {
      const index = missing[next++]!;
      for (let attempt = 1; attempt <= TRANSACTION_TRACE_TRIES && !traces[index] && !stopped; attempt += 1) {
        try {
          traces[index] = await tracer.traceTransaction(request, block.transactions[index]!.hash, TRANSACTION_TRACE_TIMEOUT_MS);
          [answered, timeoutsInARow] = [true, 0];
        } catch (error) {
          const timedOut = isTimeout(error);
          if (timedOut) lastTimeout = error;
          else [answered, timeoutsInARow] = [true, 0];
          if (isNodeFailing(error) || (timedOut && ++timeoutsInARow >= TRANSACTION_TIMEOUTS_HUNG)) {
            stopped = true;
            throw error;
          }
          // A trace that took too long takes as long again: tried once.
          if (timedOut) break;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(TRANSACTION_TRACES_IN_PARALLEL, missing.length) }, worker));
  if (!answered && lastTimeout) throw lastTimeout;
}
