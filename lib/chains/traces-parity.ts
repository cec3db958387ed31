/**
 * Parity-style tracing (anvil, Erigon, Reth, Nethermind): `trace_block`, a flat list of every call
 * of the block, each with its transaction's position and its place in the call tree
 * (`traceAddress`), made here into the callTracer's trees.
 */
import { LaggingNodeError } from './rpc';
import type { BlockTracer } from './traces';
import type { CallFrame, Hex } from './rpc-types';

/** One entry of `trace_block` / `trace_transaction`. */
interface ParityTrace {
  type: 'call' | 'create' | 'suicide' | 'selfdestruct' | 'reward' | string;
  action: {
    callType?: string;
    creationMethod?: string;
    from?: Hex;
    to?: Hex;
    value?: Hex;
    gas?: Hex;
    address?: Hex;
    refundAddress?: Hex;
    balance?: Hex;
  };
  result?: { gasUsed?: Hex; address?: Hex } | null;
  error?: string;
  traceAddress: number[];
  blockHash?: Hex;
  transactionHash?: Hex | null;
  transactionPosition?: number | null;
}

export const parityTracer: BlockTracer = {
  method: 'trace_block',
  probe: { method: 'trace_block', params: ['0x0'] },
  async traceBlock(request, block, timeoutMs) {
    // By number, as every node serving it takes (not all take a hash): an answer about another block at that height is a node behind.
    const traces = await request<ParityTrace[] | null>('trace_block', [block.number], timeoutMs);
    if (!traces) throw new LaggingNodeError(`trace_block: block ${Number(block.number)} is not known yet`);
    const byTransaction = new Map<string, ParityTrace[]>();
    for (const trace of traces) {
      if (trace.blockHash && trace.blockHash.toLowerCase() !== block.hash.toLowerCase()) {
        throw new LaggingNodeError(`trace_block: block ${Number(block.number)} is ${trace.blockHash} at the node, not ${block.hash} yet`);
      }
      if (!trace.transactionHash) continue; // a block reward
      let list = byTransaction.get(trace.transactionHash.toLowerCase());
      if (!list) byTransaction.set(trace.transactionHash.toLowerCase(), (list = []));
      list.push(trace);
    }
    return block.transactions.map((transaction) => callTree(byTransaction.get(transaction.hash.toLowerCase()) ?? []));
  },
  async traceTransaction(request, hash, timeoutMs) {
    const traces = await request<ParityTrace[] | null>('trace_transaction', [hash], timeoutMs);
    if (!traces?.length) throw new LaggingNodeError(`trace_transaction: transaction ${hash} is not known yet`);
    return callTree(traces);
  },
  // The transaction's own call as geth's callTracer reports it: parity traces leave the intrinsic gas out of its gas and gas used.
  withReceipts: (traces, block, receipts) =>
    traces.map((trace, index) => trace && { ...trace, gas: block.transactions[index]!.gas, ...(receipts[index] ? { gasUsed: receipts[index]!.gasUsed } : {}) }),
};

/** A transaction's entries as one tree, its root the transaction's own call; `null` without a root. */
function callTree(traces: ParityTrace[]): CallFrame | null {
  const frames = new Map<string, CallFrame>();
  let root: CallFrame | null = null;
  for (const trace of traces) {
    const frame = frameOf(trace);
    if (!frame) continue;
    frames.set(trace.traceAddress.join(','), frame);
    if (trace.traceAddress.length === 0) {
      root = frame;
      continue;
    }
    const parent = frames.get(trace.traceAddress.slice(0, -1).join(','));
    if (parent) (parent.calls ??= []).push(frame);
  }
  return root;
}

function frameOf({ type, action, result, error }: ParityTrace): CallFrame | undefined {
  const outcome = { ...(result?.gasUsed ? { gasUsed: result.gasUsed } : {}), ...(error ? { error } : {}) };
  if (type === 'call') {
    return { type: (action.callType ?? 'call').toUpperCase(), from: action.from!, to: action.to, value: action.value, gas: action.gas, ...outcome };
  }
  if (type === 'create') {
    const kind = action.creationMethod === 'create2' ? 'CREATE2' : 'CREATE';
    return { type: kind, from: action.from!, ...(result?.address ? { to: result.address } : {}), value: action.value, gas: action.gas, ...outcome };
  }
  if (type === 'suicide' || type === 'selfdestruct') {
    return { type: 'SELFDESTRUCT', from: action.address!, to: action.refundAddress, value: action.balance, ...outcome };
  }
  return undefined;
}
