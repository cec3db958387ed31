/** geth's tracing (geth, Avalanche's coreth and their forks): `debug_traceBlockByHash` with the callTracer, which answers the call trees themselves. */
import { LaggingNodeError } from './rpc';
import type { BlockTracer } from './traces';
import type { CallFrame, Hex } from './rpc-types';

const CALL_TRACER = { tracer: 'callTracer' };
const NO_BLOCK = `0x${'0'.repeat(64)}`;

export const callTracer: BlockTracer = {
  method: 'debug_traceBlockByHash',
  probe: { method: 'debug_traceBlockByHash', params: [NO_BLOCK, CALL_TRACER] },
  async traceBlock(request, block, timeoutMs) {
    const traces = await request<{ result?: CallFrame; error?: unknown }[] | null>('debug_traceBlockByHash', [block.hash, CALL_TRACER], timeoutMs);
    if (!traces) throw new LaggingNodeError(`debug_traceBlockByHash: block ${block.hash} is not known yet`);
    // A transaction geth could not trace (a tracer timeout, say) comes back as `{txHash, error}`.
    return traces.map((trace) => trace.result ?? null);
  },
  async traceTransaction(request, hash: Hex, timeoutMs) {
    const trace = await request<CallFrame | null>('debug_traceTransaction', [hash, CALL_TRACER], timeoutMs);
    if (!trace) throw new LaggingNodeError(`debug_traceTransaction: transaction ${hash} is not known yet`);
    return trace;
  },
};
