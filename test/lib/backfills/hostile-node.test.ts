import { createServer as createTcpServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { localLogger } from '../../../infra/local/local-logger';
import { FIRST_RUN_BLOCKS, UNREADABLE_BLOCK_ATTEMPTS } from '../../../lib/backfills/runner';
import { QUARANTINE_AFTER_ATTEMPTS } from '../../../lib/chains/follower';
import { devChainSettings } from '../../../lib/config/chains';
import { listQuarantinedBlocks } from '../../../lib/store/chains';
import * as messages from '../../../lib/store/messages';
import { chainWebhooks, notificationOf, useDevChain } from '../../support/dev-chain';
import { randomAddress } from '../../support/factories';
import { backfillCalls } from '../../support/backfills';
import { useLocalService } from '../../support/local-service';
import type { ReceivedRequest } from '../../support/receiver';
import { startRpcProxy, type RpcCall, type RpcProxy, type RpcResponse } from '../../support/rpc-proxy';

const CHAIN_ID = '31337';
const chain = useDevChain(CHAIN_ID);

/**
 * A node that prunes while a backfill reads it: once `read` (a block hash) has had its receipts
 * served, the next block asked for in (`read`'s number, `horizon`) and every block below the horizon
 * are gone: `null` for the block itself, or "missing trie node" for its receipts and traces. The
 * horizon is below the blocks the live follower reads, as a pruned node's is far below its head.
 */
const pruning = { read: '', horizon: 0, answer: 'null' as 'null' | 'missing trie node', readServed: false, from: undefined as number | undefined };
const numberOfBlock = new Map<string, number>();

function prunedAnswer(call: RpcCall, fromNode: RpcResponse): RpcResponse {
  const result = fromNode.result as { hash?: string; number?: string } | null;
  if (call.method === 'eth_getBlockByNumber' && result?.hash) numberOfBlock.set(result.hash, Number(result.number));
  const byHash = call.method === 'eth_getBlockReceipts' || call.method === 'debug_traceBlockByHash';
  const number = call.method === 'eth_getBlockByNumber' ? Number(call.params[0]) : byHash ? numberOfBlock.get(call.params[0] as string) : undefined;
  if (number === undefined || number >= pruning.horizon) return fromNode;
  // Asked for after `read`'s block was taken whole: the backfill's next run.
  if (pruning.readServed && pruning.from === undefined && call.method === 'eth_getBlockByNumber' && number > numberOfBlock.get(pruning.read)!) pruning.from = number;
  if (pruning.from !== undefined) {
    if (pruning.answer === 'null' && call.method === 'eth_getBlockByNumber') return { ...fromNode, result: null };
    // geth's answer for the state or receipts of a block it no longer has.
    if (pruning.answer === 'missing trie node' && byHash) return { jsonrpc: '2.0', id: call.id, error: { code: -32000, message: `missing trie node ${'ab'.repeat(32)} (path ) <nil>` } };
  }
  if (call.method === 'eth_getBlockReceipts' && call.params[0] === pruning.read) pruning.readServed = true;
  return fromNode;
}

/** A TCP gate on a port of its own in front of the proxy: closed, connections to the node are refused, as to a node that is down. */
async function startGate(target: string) {
  const targetPort = Number(new URL(target).port);
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  };
  const server: Server = createTcpServer((socket) => {
    const upstream = connect(targetPort, '127.0.0.1');
    track(socket);
    track(upstream);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const down = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  return {
    url: `http://127.0.0.1:${port}`,
    down,
    up: () => (server.listening ? Promise.resolve() : new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))),
    close: () => (server.listening ? down() : Promise.resolve()),
  };
}

let proxy: RpcProxy;
let gate: Awaited<ReturnType<typeof startGate>>;
beforeAll(async () => {
  proxy = await startRpcProxy(chain.rpcUrl(), { answer: prunedAnswer });
  gate = await startGate(proxy.url);
});
afterAll(async () => {
  await gate.close();
  await proxy.close();
});
afterEach(() => Object.assign(pruning, { read: '', horizon: 0, answer: 'null', readServed: false, from: undefined }));

// The service's follower and backfill runner both read the chain through the gate and the proxy. Turns of
// 1 s: fewer attempts fit in one than fail a pruned block (4) or quarantine a poison one (5).
const client = useLocalService(
  { DELIVERY_RETRY_SCHEDULE: '0.2,0.4', DELIVERY_TIMEOUT_SECONDS: '1', BACKFILL_RPC_REQUESTS_PER_SECOND: '2000', BACKFILL_MAX_BLOCKS: '5000', BACKFILL_RUNNING_PER_ACCOUNT: '1', BACKFILL_TURN_SECONDS: '1' },
  () => ({ chains: [devChainSettings(CHAIN_ID, gate.url)] }),
);
const { watch } = chainWebhooks(client, CHAIN_ID);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const { checkpointAtLeast, backfillEnded } = backfillCalls(client, CHAIN_ID);

/** Transfers to `to`, each in a block of its own, `emptyBlocksBetween` empty blocks after each. */
async function transfersTo(to: string, count: number, emptyBlocksBetween = 0) {
  const from = await chain.fundedAddress();
  const receipts = [];
  for (let index = 0; index < count; index += 1) {
    receipts.push(await chain.send({ from, to, value: BigInt(index + 1) }));
    if (emptyBlocksBetween > 0) await chain.rpc('anvil_mine', [`0x${emptyBlocksBetween.toString(16)}`]);
  }
  return receipts;
}

/** A webhook created once the follower is past the transfers to its address: only a backfill can notify them. */
async function watchedAfter(to: string, lastBlock: number) {
  await chain.rpc('anvil_mine', ['0x3']);
  await checkpointAtLeast(lastBlock + 3);
  return watch([to]);
}

const startBackfill = async (key: string, webhookId: string, body: Record<string, number>) => {
  const started = await client.call('POST', `/v1/webhooks/${webhookId}/backfills`, { key, body });
  expect(started.status).toBe(202);
  return started.body;
};

const txHashesOf = (requests: ReceivedRequest[]) => requests.map((request) => notificationOf(request).event.transaction.txHash);

describe('a backfill from a node that prunes the blocks it has not read yet', () => {
  test.each([
    ['null for the blocks', 'null' as const, /^the node has no block (\d+) \(a node that prunes old blocks cannot serve them\)/],
    ['"missing trie node" for their receipts and traces', 'missing trie node' as const, /^the node could not serve block (\d+): .*missing trie node/],
  ])('answering %s fails with a reason naming the block and why; what it read stays recorded, and its slot is free', async (_, answer, reason) => {
    const to = randomAddress();
    // Each transfer in a run of blocks of its own (a backfill's first run is FIRST_RUN_BLOCKS long, and it starts at
    // the first transfer's block below): the node prunes between the two runs.
    const [read, pruned] = await transfersTo(to, 2, FIRST_RUN_BLOCKS + 10);
    const [readBlock, prunedBlock] = [Number(read.blockNumber), Number(pruned.blockNumber)];
    const { receiver, key, webhook } = await watchedAfter(to, prunedBlock);
    Object.assign(pruning, { read: read.blockHash, horizon: prunedBlock + 1, answer });

    const started = await startBackfill(key, webhook.id, { fromBlock: readBlock });
    const ended = await backfillEnded(key, webhook.id, started.backfillId);
    expect(ended).toMatchObject({ status: 'failed', notifications: 1 });
    const [, failedAt] = reason.exec(ended.reason) ?? [];
    expect({ reason: ended.reason, failedAt: Number(failedAt) }).toEqual({ reason: expect.stringMatching(reason), failedAt: ended.nextBlock });
    // `null` stops it at the first block of the run after the one read (asked for again once the node pruned); the error at the first
    // with transactions, whose receipts it asks for.
    expect(pruning.from).toBeGreaterThan(readBlock);
    if (answer === 'null') {
      expect(ended.nextBlock).toBeGreaterThan(readBlock);
      expect(ended.nextBlock).toBeLessThanOrEqual(pruning.from!);
    } else expect(ended.nextBlock).toBe(prunedBlock);
    expect(txHashesOf(await receiver.waitFor(1))).toEqual([read.transactionHash]);
    const log = await client.call('GET', `/v1/webhooks/${webhook.id}/deliveries`, { key });
    expect(log.body.deliveries.map((delivery: { backfillId: string }) => delivery.backfillId)).toEqual([started.backfillId]);

    // The webhook's and the account's running slots (1 per account here) are free.
    const again = await startBackfill(key, webhook.id, { fromBlock: prunedBlock + 1 });
    expect((await client.call('DELETE', `/v1/webhooks/${webhook.id}/backfills/${again.backfillId}`, { key })).body.status).toBe('cancelled');
  });
});

describe('a backfill from a node that is down for a while', () => {
  test(`is not failed however many times in a row the node refuses (here ${UNREADABLE_BLOCK_ATTEMPTS}, which fail a pruned block): it completes once the node answers again`, async () => {
    const to = randomAddress();
    const [transfer] = await transfersTo(to, 1);
    const { receiver, key, webhook } = await watchedAfter(to, Number(transfer.blockNumber));
    const failures = jest.spyOn(localLogger, 'warn');
    try {
      await gate.down();
      const fromBlock = Number(transfer.blockNumber);
      const started = await startBackfill(key, webhook.id, { fromBlock });
      const failuresOfBackfill = () => failures.mock.calls.filter(([message, details]) => message === 'backfill run failed; taken again' && (details as { backfillId?: string }).backfillId === started.backfillId);
      for (let tries = 0; failuresOfBackfill().length < UNREADABLE_BLOCK_ATTEMPTS; tries += 1) {
        if (tries > 300) throw new Error(`the runner failed ${failuresOfBackfill().length} times while the node was down`);
        await sleep(50);
      }
      expect(failuresOfBackfill().map(([, details]) => (details as { error: string }).error)).toEqual(
        Array(failuresOfBackfill().length).fill(expect.stringMatching(/^HttpRequestError: (fetch failed: )?HTTP request failed/)),
      );
      expect((await client.call('GET', `/v1/webhooks/${webhook.id}/backfills/${started.backfillId}`, { key })).body).toMatchObject({ status: 'running', nextBlock: fromBlock });

      await gate.up();
      expect(await backfillEnded(key, webhook.id, started.backfillId)).toMatchObject({ status: 'completed', notifications: 1 });
      expect(txHashesOf(await receiver.waitFor(1))).toEqual([transfer.transactionHash]);
    } finally {
      failures.mockRestore();
      await gate.up();
    }
  });
});

describe('a backfill over a block whose notifications the store refuses for the webhook', () => {
  test(`quarantines that block for the webhook after ${QUARANTINE_AFTER_ATTEMPTS} attempts and completes with the other blocks' notifications`, async () => {
    const to = randomAddress();
    const [before, hostile, after] = await transfersTo(to, 3);
    const { receiver, key, webhook } = await watchedAfter(to, Number(after.blockNumber));
    const refusal = refuseNotificationsOf(webhook.id, hostile.transactionHash);
    try {
      const started = await startBackfill(key, webhook.id, { fromBlock: Number(before.blockNumber) });
      expect(await backfillEnded(key, webhook.id, started.backfillId)).toMatchObject({ status: 'completed', notifications: 2, nextBlock: started.toBlock + 1 });
      expect(txHashesOf(await receiver.waitFor(2)).sort()).toEqual([before.transactionHash, after.transactionHash].sort());
      expect((await listQuarantinedBlocks(CHAIN_ID)).filter((block) => block.webhookId === webhook.id)).toEqual([
        {
          number: Number(hostile.blockNumber),
          hash: hostile.blockHash,
          webhookId: webhook.id,
          account: expect.any(String),
          attempts: QUARANTINE_AFTER_ATTEMPTS,
          reason: expect.stringMatching(/^WebhooksFailed: notifications of 1 webhook\(s\) not recorded: ValidationException: /),
          quarantinedAt: expect.any(Number),
        },
      ]);
      // The whole chain is not quarantined: the live follower never failed on it.
      expect((await listQuarantinedBlocks(CHAIN_ID)).filter((block) => block.webhookId === undefined)).toEqual([]);
    } finally {
      refusal.mockRestore();
    }
  });
});

/**
 * A fault in recording one transaction's notification for the webhook that asking again does not
 * fix: the store refuses it (as it would an item over its 400 KB). No chain data can make that
 * happen any more (test/support/broken-webhook.ts), so the store's refusal is stood in for.
 */
function refuseNotificationsOf(webhookId: string, txHash: string) {
  const putNewMessage = messages.putNewMessage;
  return jest.spyOn(messages, 'putNewMessage').mockImplementation(async (message) => {
    if (message.webhookId !== webhookId || !message.event.text.includes(txHash)) return putNewMessage(message);
    throw Object.assign(new Error('Item size has exceeded the maximum allowed size'), { name: 'ValidationException' });
  });
}
