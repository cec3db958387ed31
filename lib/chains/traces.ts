/**
 * Internal transactions: how a block's call trees are asked of its node. Nodes serve them by one of
 * two methods (the kinds below, registered in TRACERS, fastest first); which one is found at start
 * by asking (`detectTraceMethod`), or set by CHAIN_TRACES. A block whose trace fails or times out is
 * traced a transaction at a time; a transaction whose trace still cannot be had is `null`: notified
 * without its internal transactions, marked `omitted.internalTransactions` (docs/chain-follower.md).
 */
import { HttpRequestError, TimeoutError } from 'viem';
import type { TraceMethod } from '../config/chains';
import { NETWORK_ERROR_CODES } from '../errors';
import { causes } from './faults';
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
}

/** Fastest first: on anvil, a block of 1 000 transfers is traced in ~15 ms by trace_block and ~3 s by the callTracer. */
export const TRACERS: readonly BlockTracer[] = [parityTracer, callTracer];

export const tracerOf = (method: TraceMethod): BlockTracer | undefined => TRACERS.find((tracer) => tracer.method === method);

/** A block trace's time: sized to the block, since the node re-executes every transaction. */
export const blockTraceTimeoutMs = (transactions: number) => 10_000 + 5 * transactions;
const TRANSACTION_TRACE_TIMEOUT_MS = 10_000;
const TRANSACTION_TRACE_TRIES = 2;
const TRANSACTION_TRACES_IN_PARALLEL = 8;

/**
 * The first of TRACERS the node serves (it answers the probe, with a result or an error of its own);
 * `off` when it serves none. Throws when the node cannot be asked (down, timing out): asked again later.
 */
export async function detectTraceMethod(request: TimedRequest): Promise<TraceMethod> {
  for (const tracer of TRACERS) {
    try {
      await request(tracer.probe.method, tracer.probe.params, TRANSACTION_TRACE_TIMEOUT_MS);
      return tracer.method;
    } catch (error) {
      if (isMethodUnserved(error)) continue;
      if (isNodeDown(error) || causes(error).some((cause) => cause instanceof TimeoutError)) throw error;
      return tracer.method;
    }
  }
  return 'off';
}

/**
 * The block's call trees, one per transaction: the whole block at once, else (a timeout, an error,
 * an answer that does not fit the block) a transaction at a time. Throws only when the node is down:
 * the block is then asked again, as for any fetch.
 */
export async function traceBlock(tracer: BlockTracer, request: TimedRequest, block: RpcBlock): Promise<(CallFrame | null)[]> {
  if (block.transactions.length === 0) return [];
  try {
    const traces = await tracer.traceBlock(request, block, blockTraceTimeoutMs(block.transactions.length));
    if (traces.length === block.transactions.length && traces.every((trace) => trace !== null)) return traces;
  } catch (error) {
    if (isNodeDown(error)) throw error;
  }
  return traceEachTransaction(tracer, request, block);
}

async function traceEachTransaction(tracer: BlockTracer, request: TimedRequest, block: RpcBlock): Promise<(CallFrame | null)[]> {
  const traces: (CallFrame | null)[] = block.transactions.map(() => null);
  let next = 0;
  const worker = async () => {
    while (next < block.transactions.length) {
      const index = next++;
      for (let attempt = 1; attempt <= TRANSACTION_TRACE_TRIES && !traces[index]; attempt += 1) {
        try {
          traces[index] = await tracer.traceTransaction(request, block.transactions[index]!.hash, TRANSACTION_TRACE_TIMEOUT_MS);
        } catch (error) {
          if (isNodeDown(error)) throw error;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(TRANSACTION_TRACES_IN_PARALLEL, block.transactions.length) }, worker));
  return traces;
}

/** The node not reached, or failing on its side (HTTP 5xx, 429): wait for it rather than notify without traces. */
function isNodeDown(error: unknown): boolean {
  return causes(error).some(
    (cause) =>
      (cause instanceof HttpRequestError && (cause.status === undefined || cause.status >= 500 || cause.status === 429)) ||
      NETWORK_ERROR_CODES.has(String(cause.code)) ||
      cause.code === 'UND_ERR_SOCKET' ||
      (cause instanceof TypeError && cause.message === 'fetch failed'),
  );
}

const METHOD_NOT_FOUND = -32601;
const UNSERVED_WORDS = /method .*(not (found|supported|available|allowed|enabled|whitelisted)|does not exist)|unsupported method|not (supported|whitelisted)|disabled/i;

/** The node's word that it does not serve a method: JSON-RPC's "method not found", or a provider's refusal of it. */
export function isMethodUnserved(error: unknown): boolean {
  return causes(error).some((cause) => {
    if (cause.code === METHOD_NOT_FOUND) return true;
    if (cause instanceof HttpRequestError && cause.status !== undefined && cause.status >= 400 && cause.status < 500) return cause.status !== 408 && cause.status !== 429;
    return typeof cause.code === 'number' && UNSERVED_WORDS.test(`${cause.details ?? ''} ${cause.message ?? ''}`);
  });
}

/**
 * The transaction's own call as geth's callTracer reports it (its gas limit, and the gas its receipt
 * says it used): parity traces leave the intrinsic gas out of both.
 */
export function withTransactionGas(trace: CallFrame | null, block: RpcBlock, receipts: RpcReceipt[], index: number): CallFrame | null {
  if (!trace) return trace;
  const receipt = receipts[index];
  return { ...trace, gas: block.transactions[index]!.gas, ...(receipt ? { gasUsed: receipt.gasUsed } : {}) };
}
