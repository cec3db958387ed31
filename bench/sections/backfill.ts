import { randomBytes } from 'node:crypto';
import { startChainFollowers } from '../../infra/local/chain-loop';
import { startDevChain } from '../../infra/local/dev-chain';
import { localLogger } from '../../infra/local/local-logger';
import { createBackfill } from '../../lib/backfills/backfills';
import { MAX_RUN_BLOCKS, runBackfills } from '../../lib/backfills/runner';
import { CATCH_UP_BATCH } from '../../lib/chains/follower';
import { ChainNode } from '../../lib/chains/rpc';
import type { Hex, RpcBlock } from '../../lib/chains/rpc-types';
import { devChainSettings } from '../../lib/config/chains';
import { runtimeConfig } from '../../lib/config/runtime';
import { NO_QUEUE } from '../../lib/deliveries/queue';
import { createWebhookBody } from '../../lib/schemas/webhook';
import { getBackfill } from '../../lib/store/backfills';
import { getCheckpoint, moveCheckpoint } from '../../lib/store/chains';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { figure, median, type BenchOptions, type Figure } from '../support/report';

/** The chains of this section (labels over one dev chain; bench/run.ts declares them followed). */
export const BACKFILL_BENCH_CHAIN_IDS = { throughput: '9100001', lag: '9200001' };

const SECTION = '13 backfill';
const THROUGHPUT_TARGET = 0.7;
const LAG_TARGET_BLOCKS = 2;
const DEV_ACCOUNT = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
/** One block in this many has a transfer; one transfer in ten goes to a watched address. */
const TRANSFER_EVERY = 10;
/** The live traffic while the paced backfill runs: a transfer to a watched address this often. */
const LIVE_TRANSFER_MS = 250;
const hex = (value: number) => `0x${value.toString(16)}` as Hex;
const randomAddress = () => `0x${randomBytes(20).toString('hex')}` as Hex;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * 1. Throughput: a backfill of the dev chain's history (10 000 blocks; quick: 1 000), its pace
 *    lifted, against the follower's catch-up floor: the same blocks and receipts fetched alone over
 *    the same RPC, 50 at a time (beside it, as many at a time as the runner's longest run).
 * 2. The live follower's lag while a backfill of the same history runs at the stage's pace, with
 *    a transfer to a watched address every 250 ms.
 */
export async function backfill({ quick, progress }: BenchOptions): Promise<Figure[]> {
  const blockCount = quick ? 1_000 : 10_000;
  const chain = await startDevChain({ port: 0, chainId: '31337' });
  try {
    const node = new ChainNode(chain.rpcUrl, 'off');
    const watched = Array.from({ length: 20 }, randomAddress);
    progress(`backfill: ${blockCount} blocks on a dev chain, a transfer in one of ${TRANSFER_EVERY} (one of ten of those to a watched address)`);
    for (let index = 0; index < blockCount / TRANSFER_EVERY; index += 1) {
      await node.request('eth_sendTransaction', [{ from: DEV_ACCOUNT, to: index % 10 === 0 ? watched[index % watched.length] : randomAddress(), value: '0x1' }]);
      await node.request('anvil_mine', [hex(TRANSFER_EVERY - 1)]);
    }
    const head = Number(await node.request<Hex>('eth_blockNumber', []));
    const account = `bench-backfill-${randomBytes(3).toString('hex')}`;
    const newWebhook = async (chainId: string) =>
      (await createWebhook(account, createWebhookBody.parse({ url: 'https://receiver.example.com/h', chainId, eventType: 'address_activity', metadata: { addresses: watched } }))).id;
    const checkpointAt = async (chainId: string, number: number) => {
      const hash = (await node.blockHashAt(number))!;
      await moveCheckpoint(chainId, await getCheckpoint(chainId), { number, hash, recent: [{ number, hash }] });
    };

    const throughputChain = { ...devChainSettings(BACKFILL_BENCH_CHAIN_IDS.throughput, chain.rpcUrl), traces: 'off' as const };
    await checkpointAt(throughputChain.chainId, head);
    const floorRuns: number[] = [];
    const wideFloorRuns: number[] = [];
    /** Fetches the blocks, and the receipts of those with transactions, `atOnce` blocks at a time: blocks/s. */
    const fetchAlone = async (atOnce: number) => {
      const started = performance.now();
      for (let first = 1; first <= head; first += atOnce) {
        await Promise.all(
          Array.from({ length: Math.min(atOnce, head - first + 1) }, async (_, offset) => {
            const block = await node.request<RpcBlock>('eth_getBlockByNumber', [hex(first + offset), true]);
            if (block.transactions.length > 0) await node.request('eth_getBlockReceipts', [block.hash]);
          }),
        );
      }
      return head / ((performance.now() - started) / 1000);
    };
    const oursRuns: { blocksPerSecond: number; requestsPerBlock: number; notifications: number }[] = [];
    for (let round = 0; round < (quick ? 1 : 3); round += 1) {
      floorRuns.push(await fetchAlone(CATCH_UP_BATCH));
      wideFloorRuns.push(await fetchAlone(MAX_RUN_BLOCKS));

      // A new webhook each round: the same work, none of it recorded before.
      const webhookId = await newWebhook(throughputChain.chainId);
      const created = await createBackfill(account, webhookId, { fromBlock: 1, toBlock: head });
      const stopping = new AbortController();
      const started = performance.now();
      const running = runBackfills(throughputChain, { leaseMs: 15_000, signal: stopping.signal, log: localLogger, queue: NO_QUEUE, rpcRequestsPerSecond: Infinity });
      let ended = await getBackfill(account, webhookId, created.backfillId);
      while (ended?.status === 'running') {
        await sleep(20);
        ended = await getBackfill(account, webhookId, created.backfillId);
      }
      const seconds = (performance.now() - started) / 1000;
      stopping.abort();
      const { rpcRequests } = await running;
      if (ended?.status !== 'completed') throw new Error(`the bench's backfill ended ${ended?.status}: ${ended?.reason}`);
      oursRuns.push({ blocksPerSecond: head / seconds, requestsPerBlock: rpcRequests / head, notifications: ended.notifications });
    }
    const floor = median(floorRuns);
    const wideFloor = median(wideFloorRuns);
    const ours = median(oursRuns.map((run) => run.blocksPerSecond));

    const lag = await liveLag({ quick, progress }, chain.rpcUrl, node, head, account, newWebhook, checkpointAt, watched);
    return [
      figure(
        SECTION,
        "backfill throughput (pace lifted) vs the follower's catch-up floor (fetching blocks + receipts alone, 50 at a time)",
        Math.round((ours / floor) * 100) / 100,
        'x',
        { target: `>= ${THROUGHPUT_TARGET}`, pass: ours / floor >= THROUGHPUT_TARGET },
        `${ours.toFixed(0)} blocks/s against ${floor.toFixed(0)} blocks/s (median of ${oursRuns.length}: ${oursRuns.map((run) => run.blocksPerSecond.toFixed(0)).join(', ')}); ` +
          `against fetching ${MAX_RUN_BLOCKS} at a time (the runner's longest run) ${wideFloor.toFixed(0)} blocks/s, ${(ours / wideFloor).toFixed(2)}x; ` +
          `${median(oursRuns.map((run) => run.requestsPerBlock)).toFixed(2)} RPC requests per block; ${oursRuns[0]!.notifications} notifications recorded per run`,
      ),
      figure(
        SECTION,
        `live follower's lag while a ${head}-block backfill runs at the stage's pace`,
        lag.max,
        'blocks (max)',
        { target: `<= ${LAG_TARGET_BLOCKS}`, pass: lag.max <= LAG_TARGET_BLOCKS && lag.completed },
        `p50 ${lag.p50}, over ${lag.samples} samples every 100 ms; the backfill at ${runtimeConfig().backfills.rpcRequestsPerSecond} requests/s: ${lag.blocksPerSecond.toFixed(0)} blocks/s (traces on, as the dev chain serves them)${lag.completed ? '' : '; NOT completed within the time allowed'}`,
      ),
    ];
  } finally {
    await chain.stop();
  }
}

async function liveLag(
  { quick, progress }: Pick<BenchOptions, 'quick' | 'progress'>,
  rpcUrl: string,
  node: ChainNode,
  head: number,
  account: string,
  newWebhook: (chainId: string) => Promise<string>,
  checkpointAt: (chainId: string, number: number) => Promise<void>,
  watched: string[],
) {
  const settings = devChainSettings(BACKFILL_BENCH_CHAIN_IDS.lag, rpcUrl);
  await checkpointAt(settings.chainId, head);
  const webhookId = await newWebhook(settings.chainId);
  const created = await createBackfill(account, webhookId, { fromBlock: 1, toBlock: head });
  progress(`backfill: the live follower's lag while ${head} blocks are backfilled at ${runtimeConfig().backfills.rpcRequestsPerSecond} requests/s`);
  const loop = startChainFollowers([settings], NO_QUEUE);
  const lags: number[] = [];
  const started = performance.now();
  const deadline = Date.now() + (quick ? 60_000 : 300_000);
  let sending = true;
  const traffic = (async () => {
    for (let index = 0; sending; index += 1) {
      await node.request('eth_sendTransaction', [{ from: DEV_ACCOUNT, to: watched[index % watched.length], value: '0x1' }]);
      await sleep(LIVE_TRANSFER_MS);
    }
  })();
  let completed = false;
  try {
    while (Date.now() < deadline) {
      const [chainHead, checkpoint] = await Promise.all([node.head(), getCheckpoint(settings.chainId)]);
      lags.push(chainHead - (checkpoint?.number ?? 0));
      const backfill = await getBackfill(account, webhookId, created.backfillId);
      if (backfill?.status === 'completed') {
        completed = true;
        break;
      }
      await sleep(100);
    }
  } finally {
    sending = false;
    await traffic;
    await loop.stop();
  }
  const sorted = [...lags].sort((a, b) => a - b);
  return { max: sorted.at(-1) ?? NaN, p50: sorted[Math.floor(sorted.length / 2)] ?? NaN, samples: lags.length, completed, blocksPerSecond: head / ((performance.now() - started) / 1000) };
}
