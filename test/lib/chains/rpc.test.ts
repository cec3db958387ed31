import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChainNode, LaggingNodeError } from '../../../lib/chains/rpc';
import { randomAddress } from '../../support/factories';
import { useDevChain } from '../../support/dev-chain';

const chain = useDevChain();

type RpcRequest = { id: number; method: string; params: unknown[] };
type Rewrite = (request: RpcRequest, forward: () => Promise<any>) => Promise<any>;

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
      const client = new ChainNode(node.url, true);
      const data = await client.blockAt(number);
      expect(data.receipts.map((receipt) => receipt.transactionHash)).toEqual(data.block.transactions.map((transaction) => transaction.hash));
      expect(data.traces).toHaveLength(3);
      await client.blockAt(number);
      expect(node.methods.filter((method) => method === 'eth_getBlockReceipts')).toHaveLength(1);
      expect(node.methods.filter((method) => method === 'eth_getTransactionReceipt')).toHaveLength(6);
    } finally {
      node.close();
    }
  });

  test('a node that returns fewer receipts or traces than transactions gives a LaggingNodeError (the follower asks again), not a block', async () => {
    const number = await blockWithTransfers(2);
    for (const method of ['eth_getBlockReceipts', 'debug_traceBlockByHash']) {
      const node = await proxy(async (request, forward) => {
        const response = await forward();
        if (request.method === method) response.result = response.result.slice(1);
        return response;
      });
      try {
        await expect(new ChainNode(node.url, true).blockAt(number)).rejects.toBeInstanceOf(LaggingNodeError);
      } finally {
        node.close();
      }
    }
  });

  test('a block the node does not have yet is lagging', async () => {
    const head = Number(await chain.rpc('eth_blockNumber'));
    await expect(new ChainNode(chain.rpcUrl(), false).blockAt(head + 5)).rejects.toBeInstanceOf(LaggingNodeError);
  });
});
