import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { newLocalDeliveryQueue } from '../../infra/local/background-work';
import { startDeliveryLoop } from '../../infra/local/delivery-loop';
import { startChainFollowers } from '../../infra/local/chain-loop';
import { startDevChain } from '../../infra/local/dev-chain';
import { localLogger } from '../../infra/local/local-logger';
import { headWrites, watcherWrites } from '../../lib/store/watch-index';
import { devChainSettings } from '../../lib/config/chains';
import { CATCH_UP_BATCH, ChainFollower } from '../../lib/chains/follower';
import { matchBlocks } from '../../lib/chains/matcher';
import { ChainNode } from '../../lib/chains/rpc';
import type { BlockData, Hex, RpcBlock, RpcReceipt } from '../../lib/chains/rpc-types';
import { createWebhookBody } from '../../lib/schemas/webhook';
import { generateOrRotateSharedSecret } from '../../lib/secrets/shared-secret';
import { writeItems } from '../../lib/store/batch';
import { moveCheckpoint } from '../../lib/store/chains';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { figure, median, type BenchOptions, type Figure } from '../support/report';
import type { DynamoDbCounter } from '../support/store';
import { NO_QUEUE } from '../../lib/deliveries/queue';

/** The chains of this section, one per part (webhooks are refused on a chain the service does not follow: bench/run.ts declares them). */
export const BENCH_CHAIN_IDS = { matching: '7000001', catchUp: '8000001', endToEnd: '9000001' };

const SECTION = '8 chains';
const MIB = 1024 * 1024;
const CATCH_UP_TARGET = 0.7;
const randomAddress = () => `0x${randomBytes(20).toString('hex')}` as Hex;
const randomHash = () => `0x${randomBytes(32).toString('hex')}` as Hex;
const hex = (value: number) => `0x${value.toString(16)}` as Hex;
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

/**
 * 1. The matcher: blocks of 500 transactions touching 1 000 distinct addresses, against 1 000 000
 *    watched addresses (quick: 100 000), of which 1 % of those touched match.
 * 2. The follower catching up on the dev chain, against a floor that only fetches the same blocks and
 *    receipts over the same RPC.
 * 3. End to end on the dev chain: a transaction sent to a notification received.
 */
export async function chains(options: BenchOptions, counter: DynamoDbCounter): Promise<Figure[]> {
  try {
    return [...(await matcher(options, counter)), ...(await catchUp(options)), ...(await endToEnd(options))];
  } finally {
    counter.stop();
  }
}

async function matcher({ quick, progress }: BenchOptions, counter: DynamoDbCounter): Promise<Figure[]> {
  const chainId = BENCH_CHAIN_IDS.matching;
  const watchedTotal = quick ? 100_000 : 1_000_000;
  progress(`chains: seeding ${watchedTotal} watched addresses on chain ${chainId}`);
  const account = `bench-chains-${randomBytes(3).toString('hex')}`;
  const touchedWatched = Array.from({ length: 10 }, randomAddress);
  await createWebhook(account, createWebhookBody.parse({ url: 'https://receiver.example.com/h', chainId, eventType: 'address_activity', metadata: { addresses: touchedWatched } }));
  const others = Array.from({ length: 100 }, () => crypto.randomUUID());
  for (let start = 0; start < watchedTotal; start += 10_000) {
    const addresses = Array.from({ length: 10_000 }, randomAddress);
    await writeItems(watcherWrites(chainId, others[(start / 10_000) % others.length]!, addresses, 'add'));
    await writeItems(headWrites(chainId, addresses));
  }
  const blocks = Array.from({ length: quick ? 5 : 20 }, () => syntheticBlock(touchedWatched));
  const runs: { ms: number; reads: number; matches: number }[] = [];
  const heapBefore = process.memoryUsage().heapUsed;
  for (const data of blocks) {
    counter.reset();
    const started = performance.now();
    const result = await matchBlocks(chainId, [data]);
    const reads = counter.calls.filter((call) => call.command === 'BatchGetItemCommand' || call.command === 'QueryCommand').length;
    runs.push({ ms: performance.now() - started, reads, matches: result.matches[0]![0]?.transactionIndexes.length ?? 0 });
  }
  const heapGrowth = (process.memoryUsage().heapUsed - heapBefore) / MIB;
  // The watched addresses are the first 10 of the block's 1 000: the from and to of its first 5 transactions.
  const allFound = runs.every((run) => run.matches === touchedWatched.length / 2);
  const worstReads = Math.max(...runs.map((run) => run.reads));
  return [
    figure(SECTION, `matcher: ms per block (500 transactions, 1 000 addresses, ${watchedTotal.toLocaleString('en-US')} watched)`, Math.round(median(runs.map((run) => run.ms)) * 10) / 10, 'ms', undefined, runs.map((run) => run.ms.toFixed(0)).join(', ')),
    figure(
      SECTION,
      'matcher: store reads per block (worst: the first, before the matched heads hold their watchers)',
      worstReads,
      'requests',
      { target: '<= 10 + 1 + 10 + 2', pass: worstReads <= 23 && allFound },
      `10 batch reads of 100 heads, the inactive webhooks, a watcher query per matched address the first time, pointers and webhooks; every match found: ${allFound}; later blocks ${runs.slice(1).map((run) => run.reads).join(', ')}`,
    ),
    figure(SECTION, 'matcher: bench heap growth over the blocks', Math.round(heapGrowth * 10) / 10, 'MiB'),
  ];
}

/** 500 transactions between 1 000 distinct addresses, 10 of them watched. */
function syntheticBlock(watched: string[]): BlockData {
  const blockHash = randomHash();
  const addresses = Array.from({ length: 1000 }, (_, index) => (index < watched.length ? (watched[index] as Hex) : randomAddress()));
  const transactions: RpcBlock['transactions'] = [];
  const receipts: RpcReceipt[] = [];
  for (let index = 0; index < 500; index += 1) {
    const hash = randomHash();
    transactions.push({ hash, blockHash, blockNumber: '0x1', transactionIndex: hex(index), from: addresses[index * 2]!, to: addresses[index * 2 + 1]!, value: '0x1', input: '0x', nonce: '0x0', type: '0x2', gas: '0x5208', gasPrice: '0x1' });
    receipts.push({ transactionHash: hash, transactionIndex: hex(index), blockHash, status: '0x1', cumulativeGasUsed: '0x5208', gasUsed: '0x5208', effectiveGasPrice: '0x1', logs: [] });
  }
  return { block: { hash: blockHash, parentHash: randomHash(), number: '0x1', timestamp: hex(Math.floor(Date.now() / 1000)), receiptsRoot: randomHash(), transactions }, receipts };
}

const DEV_ACCOUNT = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';

async function catchUp({ quick, progress }: BenchOptions): Promise<Figure[]> {
  const blockCount = quick ? 200 : 1000;
  const chainId = BENCH_CHAIN_IDS.catchUp;
  const chain = await startDevChain({ port: 0, chainId });
  try {
    const node = new ChainNode(chain.rpcUrl, 'off');
    const watched = Array.from({ length: 20 }, randomAddress);
    const account = `bench-chains-${randomBytes(3).toString('hex')}`;
    await createWebhook(account, createWebhookBody.parse({ url: 'https://receiver.example.com/h', chainId, eventType: 'address_activity', metadata: { addresses: watched } }));
    progress(`chains: ${blockCount} blocks on a dev chain, a transfer in each (every 10th to a watched address)`);
    for (let index = 0; index < blockCount; index += 1) {
      const to = index % 10 === 0 ? watched[index % watched.length]! : randomAddress();
      await node.request('eth_sendTransaction', [{ from: DEV_ACCOUNT, to, value: '0x1' }]);
    }
    const floorRuns: number[] = [];
    const oursRuns: number[] = [];
    for (let round = 0; round < (quick ? 1 : 3); round += 1) {
      // The floor: the same blocks and receipts over the same transport, as many blocks at a time.
      let started = performance.now();
      for (let first = 1; first <= blockCount; first += CATCH_UP_BATCH) {
        await Promise.all(
          Array.from({ length: Math.min(CATCH_UP_BATCH, blockCount - first + 1) }, async (_, offset) => {
            const block = await node.request<RpcBlock>('eth_getBlockByNumber', [hex(first + offset), true]);
            await node.request('eth_getBlockReceipts', [block.hash]);
          }),
        );
      }
      floorRuns.push(blockCount / ((performance.now() - started) / 1000));

      const runChain = `${chainId}${round}`;
      const follower = new ChainFollower({ ...devChainSettings(runChain, chain.rpcUrl), traces: 'off' as const }, localLogger, NO_QUEUE);
      const genesis = (await node.blockHashAt(0))!;
      await moveCheckpoint(runChain, undefined, { number: 0, hash: genesis, recent: [{ number: 0, hash: genesis }] });
      started = performance.now();
      while (!(await follower.step()).caughtUp);
      oursRuns.push(blockCount / ((performance.now() - started) / 1000));
    }
    const ours = median(oursRuns);
    const floor = median(floorRuns);
    return [
      figure(SECTION, 'follower catch-up vs fetching blocks + receipts alone', Math.round((ours / floor) * 100) / 100, 'x', { target: `>= ${CATCH_UP_TARGET}`, pass: ours / floor >= CATCH_UP_TARGET }, `${ours.toFixed(0)} blocks/s against ${floor.toFixed(0)} blocks/s (median of ${oursRuns.length})`),
    ];
  } finally {
    await chain.stop();
  }
}

async function endToEnd({ quick, progress }: BenchOptions): Promise<Figure[]> {
  const transfers = quick ? 30 : 100;
  const chainId = BENCH_CHAIN_IDS.endToEnd;
  const chain = await startDevChain({ port: 0, chainId });
  const arrivals = new Map<string, number>();
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      arrivals.set(JSON.parse(Buffer.concat(chunks).toString()).event.transaction.txHash, performance.now());
      response.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const queue = newLocalDeliveryQueue();
  const delivery = startDeliveryLoop(queue);
  const followers = startChainFollowers([devChainSettings(chainId, chain.rpcUrl)], queue);
  try {
    const node = new ChainNode(chain.rpcUrl, 'off');
    const to = randomAddress();
    const account = `bench-chains-${randomBytes(3).toString('hex')}`;
    await generateOrRotateSharedSecret(account);
    await createWebhook(account, createWebhookBody.parse({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`, chainId, eventType: 'address_activity', metadata: { addresses: [to] } }));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    progress(`chains: ${transfers} transfers sent one at a time, each timed to its notification`);
    const sent = new Map<string, number>();
    for (let index = 0; index < transfers; index += 1) {
      const hash = await node.request<string>('eth_sendTransaction', [{ from: DEV_ACCOUNT, to, value: '0x1' }]);
      sent.set(hash, performance.now());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const deadline = Date.now() + 15_000;
    while (arrivals.size < transfers && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    const latencies = [...sent].filter(([hash]) => arrivals.has(hash)).map(([hash, at]) => arrivals.get(hash)! - at);
    const detail = `${latencies.length} of ${transfers} arrived; the follower polls the dev chain every ${devChainSettings(chainId, '').pollIntervalMs} ms`;
    return [
      figure(SECTION, 'end to end: transaction sent -> notification received, p50', Math.round(percentile(latencies, 50)), 'ms', { target: '<= 1000', pass: latencies.length === transfers && percentile(latencies, 50) <= 1000 }, detail),
      figure(SECTION, 'end to end: p99', Math.round(percentile(latencies, 99)), 'ms', { target: '<= 2000', pass: latencies.length === transfers && percentile(latencies, 99) <= 2000 }),
    ];
  } finally {
    await followers.stop();
    await delivery.stop();
    queue.close();
    receiver.close();
    await chain.stop();
  }
}
