import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeFunctionData } from 'viem';
import { Forwarder } from '../../../infra/dev-contracts.generated';
import { ChainNode, LaggingNodeError } from '../../../lib/chains/rpc';
import type { CallFrame } from '../../../lib/chains/rpc-types';
import { randomAddress } from '../../support/factories';
import { useDevChain } from '../../support/dev-chain';

const chain = useDevChain();

type RpcRequest = { id: number; method: string; params: unknown[] };
type Rewrite = (request: RpcRequest, forward: () => Promise<any>) => Promise<any>;
const DESTROY = 'destroy';

/** A JSON-RPC proxy on loopback in front of anvil that may answer some requests itself. */
async function proxy(rewrite: Rewrite): Promise<{ url: string; methods: string[]; close: () => void }> {
  const methods: string[] = [];
  const forwardOne = async (request: RpcRequest) => {
    const response = await fetch(chain.rpcUrl(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) });
    return response.json();
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString());
      const answer = async (request: RpcRequest) => {
        methods.push(request.method);
        return rewrite(request, () => forwardOne(request));
      };
      const result = Array.isArray(body) ? await Promise.all(body.map(answer)) : await answer(body);
      // A node gone mid-request: the connection closed without an answer.
      if ([result].flat().includes(DESTROY)) return void res.socket?.destroy();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(result));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, methods, close: () => server.close() };
}

async function blockWithTransfers(count: number): Promise<number> {
  await chain.rpc('evm_setAutomine', [false]);
  for (let index = 0; index < count; index += 1) {
    await chain.rpc('eth_sendTransaction', [{ from: '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266', to: randomAddress(), value: '0x1' }]);
  }
  await chain.rpc('evm_mine');
  await chain.rpc('evm_setAutomine', [true]);
  return Number(await chain.rpc('eth_blockNumber'));
}

describe('ChainNode', () => {
  test('fetches receipts one transaction at a time from a node without eth_getBlockReceipts, and remembers it', async () => {
    const number = await blockWithTransfers(3);
    const node = await proxy(async (request, forward) =>
      request.method === 'eth_getBlockReceipts' ? { jsonrpc: '2.0', id: request.id, error: { code: -32601, message: 'the method eth_getBlockReceipts does not exist' } } : forward(),
    );
    try {
      const client = new ChainNode(node.url, 'auto');
      const data = await client.blockAt(number, { traces: true });
      expect(data.receipts.map((receipt) => receipt.transactionHash)).toEqual(data.block.transactions.map((transaction) => transaction.hash));
      expect(data.traces).toHaveLength(3);
      await client.blockAt(number, { traces: true });
      expect(node.methods.filter((method) => method === 'eth_getBlockReceipts')).toHaveLength(1);
      expect(node.methods.filter((method) => method === 'eth_getTransactionReceipt')).toHaveLength(6);
    } finally {
      node.close();
    }
  });

  test('a node that returns fewer receipts than transactions gives a LaggingNodeError (the follower asks again), not a block', async () => {
    const number = await blockWithTransfers(2);
    const node = await proxy(async (request, forward) => {
      const response = await forward();
      if (request.method === 'eth_getBlockReceipts') response.result = response.result.slice(1);
      return response;
    });
    try {
      await expect(new ChainNode(node.url, 'auto').blockAt(number, { traces: true })).rejects.toBeInstanceOf(LaggingNodeError);
    } finally {
      node.close();
    }
  });

  test('a block the node does not have yet is lagging', async () => {
    const head = Number(await chain.rpc('eth_blockNumber'));
    await expect(new ChainNode(chain.rpcUrl(), 'off').blockAt(head + 5, { traces: false })).rejects.toBeInstanceOf(LaggingNodeError);
  });
});

const unserved = (request: RpcRequest) => ({ jsonrpc: '2.0', id: request.id, error: { code: -32601, message: `the method ${request.method} does not exist/is not available` } });
const TRACE_METHODS = ['trace_block', 'trace_transaction', 'debug_traceBlockByHash', 'debug_traceTransaction'];

/** A block with a transfer and a call through the forwarder (an internal transfer), and the forwarded-to address. */
async function blockWithInternalCall(): Promise<{ number: number; to: string }> {
  const from = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
  const created = await chain.send({ from, data: Forwarder.bytecode });
  const to = randomAddress();
  await chain.rpc('evm_setAutomine', [false]);
  await chain.rpc('eth_sendTransaction', [{ from, to: randomAddress(), value: '0x1' }]);
  await chain.rpc('eth_sendTransaction', [{ from, to: created.contractAddress, value: '0x2', data: encodeFunctionData({ abi: Forwarder.abi, functionName: 'forward', args: [to as `0x${string}`] }) }]);
  await chain.rpc('evm_mine');
  await chain.rpc('evm_setAutomine', [true]);
  return { number: Number(await chain.rpc('eth_blockNumber')), to };
}

/** What the notifications show of a call tree: each call's kind, parties and value, depth first. */
const calls = (frame: CallFrame | null | undefined): string[] =>
  frame ? [`${frame.type} ${frame.from.toLowerCase()}->${frame.to?.toLowerCase()} ${BigInt(frame.value ?? '0x0')}`, ...(frame.calls ?? []).flatMap(calls)] : [];

describe('tracing', () => {
  test('the method is found per node: trace_block where served, else debug_traceBlockByHash, else none', async () => {
    expect(await new ChainNode(chain.rpcUrl(), 'auto').detectTraceMethod()).toBe('trace_block');
    const gethLike = await proxy(async (request, forward) => (request.method.startsWith('trace_') ? unserved(request) : forward()));
    const untraced = await proxy(async (request, forward) => (TRACE_METHODS.includes(request.method) ? unserved(request) : forward()));
    try {
      expect(await new ChainNode(gethLike.url, 'auto').detectTraceMethod()).toBe('debug_traceBlockByHash');
      const none = new ChainNode(untraced.url, 'auto');
      expect(await none.detectTraceMethod()).toBe('off');
      expect(none.traceMethod).toBe('off');
      // Forced by CHAIN_TRACES: not asked.
      const forced = new ChainNode(untraced.url, 'debug_traceBlockByHash');
      expect(forced.traceMethod).toBe('debug_traceBlockByHash');
      expect(await forced.detectTraceMethod()).toBe('debug_traceBlockByHash');
    } finally {
      gethLike.close();
      untraced.close();
    }
  });

  test('trace_block and the callTracer give the same call trees, the transaction gas as its receipt says', async () => {
    const { number, to } = await blockWithInternalCall();
    const parity = await new ChainNode(chain.rpcUrl(), 'trace_block').blockAt(number, { traces: true });
    const geth = await new ChainNode(chain.rpcUrl(), 'debug_traceBlockByHash').blockAt(number, { traces: true });
    expect(parity.traces!.map(calls)).toEqual(geth.traces!.map(calls));
    expect(calls(parity.traces![1])).toEqual([expect.stringMatching(/^CALL /), `CALL ${parity.block.transactions[1]!.to}->${to.toLowerCase()} 2`]);
    parity.traces!.forEach((trace, index) => {
      expect(trace!.gas).toBe(parity.block.transactions[index]!.gas);
      expect(trace!.gasUsed).toBe(parity.receipts[index]!.gasUsed);
    });
  });

  test('a block trace that fails is traced a transaction at a time; one that cannot be traced is null, and the block is still given', async () => {
    const { number } = await blockWithInternalCall();
    for (const [method, single] of [['trace_block', 'trace_transaction'], ['debug_traceBlockByHash', 'debug_traceTransaction']] as const) {
      let failedHash: string | undefined;
      const node = await proxy(async (request, forward) => {
        if (request.method === method) return { jsonrpc: '2.0', id: request.id, error: { code: -32000, message: 'execution timeout' } };
        if (request.method === single) {
          failedHash ??= request.params[0] as string;
          if (request.params[0] === failedHash) return { jsonrpc: '2.0', id: request.id, error: { code: -32000, message: 'execution timeout' } };
        }
        return forward();
      });
      try {
        const data = await new ChainNode(node.url, method).blockAt(number, { traces: true });
        const failedIndex = data.block.transactions.findIndex((transaction) => transaction.hash === failedHash);
        expect(data.traces).toHaveLength(2);
        expect(data.traces![failedIndex]).toBeNull();
        expect(data.traces![1 - failedIndex]).toEqual(expect.objectContaining({ type: 'CALL' }));
        // Two tries of the one that fails, one of the other.
        expect(node.methods.filter((called) => called === single)).toHaveLength(3);
      } finally {
        node.close();
      }
    }
  });

  test('a block trace that times out is traced a transaction at a time', async () => {
    const { number } = await blockWithInternalCall();
    const node = await proxy(async (request, forward) => {
      if (request.method !== 'debug_traceBlockByHash') return forward();
      await new Promise((resolve) => setTimeout(resolve, 11_000));
      return { jsonrpc: '2.0', id: request.id, error: { code: -32000, message: 'answered too late' } };
    });
    try {
      const data = await new ChainNode(node.url, 'debug_traceBlockByHash').blockAt(number, { traces: true });
      expect(data.traces!.map(calls)[1]).toHaveLength(2);
      expect(node.methods.filter((called) => called === 'debug_traceTransaction')).toHaveLength(2);
    } finally {
      node.close();
    }
  }, 30_000);

  test('a node that is down while tracing fails the block (asked again), rather than notify it untraced', async () => {
    const { number } = await blockWithInternalCall();
    const node = await proxy(async (request, forward) => {
      if (request.method.startsWith('trace_')) return DESTROY;
      return forward();
    });
    try {
      await expect(new ChainNode(node.url, 'trace_block').blockAt(number, { traces: true })).rejects.toThrow();
    } finally {
      node.close();
    }
  });

  test('a node behind, or one whose traces all time out, fails the block (asked again) rather than notify it untraced', async () => {
    const { number } = await blockWithInternalCall();
    const behind = await proxy(async (request, forward) => (request.method.startsWith('trace_') ? { jsonrpc: '2.0', id: request.id, result: null } : forward()));
    const hanging = await proxy(async (request, forward) => {
      if (request.method === 'trace_block') return { jsonrpc: '2.0', id: request.id, error: { code: -32000, message: 'execution timeout' } };
      if (request.method !== 'trace_transaction') return forward();
      await new Promise((resolve) => setTimeout(resolve, 11_000));
      return { jsonrpc: '2.0', id: request.id, error: { code: -32000, message: 'answered too late' } };
    });
    try {
      await expect(new ChainNode(behind.url, 'trace_block').blockAt(number, { traces: true })).rejects.toBeInstanceOf(LaggingNodeError);
      await expect(new ChainNode(hanging.url, 'trace_block').blockAt(number, { traces: true })).rejects.toThrow(/took too long/);
    } finally {
      behind.close();
      hanging.close();
    }
  }, 30_000);

  test('no trace is asked for a block when none is wanted', async () => {
    const { number } = await blockWithInternalCall();
    const node = await proxy(async (_request, forward) => forward());
    try {
      const data = await new ChainNode(node.url, 'auto').blockAt(number, { traces: false });
      expect(data.traces).toBeUndefined();
      expect(node.methods.filter((called) => TRACE_METHODS.includes(called))).toEqual([]);
    } finally {
      node.close();
    }
  });
});
