import { setTimeout as sleep } from 'node:timers/promises';
import { newLocalDeliveryQueue } from '../../infra/local/background-work';
import { startChainFollowers } from '../../infra/local/chain-loop';
import { startDeliveryLoop } from '../../infra/local/delivery-loop';
import { startDevChain, type DevChain } from '../../infra/local/dev-chain';
import { devChainSettings } from '../../lib/config/chains';
import type { Hex } from '../../lib/chains/rpc-types';
import type { QueueSender } from '../../lib/deliveries/queue';
import { getCheckpoint } from '../../lib/store/chains';
import { startArrivalReceiver, type ArrivalReceiver } from '../support/arrival-receiver';
import { BlockFiller, type MinedBlock, type PlannedTransaction } from '../support/block-filler';
import { checkpointAtHead, followerRounds, RECEIPTS_AND_TRACES } from '../support/follower-rounds';
import { startCountingRpcProxy, type CountingRpcProxy } from '../support/rpc-counter';
import { figure, median, percentile, type BenchOptions, type Figure } from '../support/report';
import { MATCHING_EVERY, watchedSet, type WatchedSet } from '../support/watched-blocks';

/** The chain of this section (webhooks are refused on a chain the service does not follow: bench/run.ts declares it). */
export const FULL_BLOCKS_BENCH_CHAIN_IDS = { blocks: '9300001' };

const SECTION = '15 full blocks';
const E2E_SIZE = 1000;
const SUSTAINED_SIZE = 300;
const SUSTAINED_INTERVAL_MS = 2000;
const RECORDED_TARGET_MS = 2000;
const RECEIVED_TARGET_MS = 10_000;
const LAG_TARGET = 2;
const QUIET_TARGET_MS = 3000;

/** Whether `done()` held within `timeoutMs`, asked every 50 ms. */
async function waitUntil(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

/**
 * Blocks as full as a busy chain's (300, 1 000 and 3 000 transactions: native transfers, ERC-20
 * transfers, calls that make an internal call), mined on anvil, against 1 000 000 watched addresses
 * (quick: 100 000) over 1 000 webhooks in 100 accounts (quick: 200 in 20), a tenth of the
 * transactions notifying one of them:
 * 1. live, on one node: the follower loop and the delivery loop of `npm start` in this process, a
 *    receiver on loopback: 1 000-transaction blocks mined -> notifications recorded and received;
 *    then 300-transaction blocks every 2 s, the follower's lag and a quiet account's latency;
 * 2. the follower stepping over blocks from a checkpoint just before them, against fetching the
 *    same blocks alone, on a second node of the same chain, stopped once measured: a follower that
 *    could not finish a block within its budget is left on it.
 */
export async function fullBlocks(options: BenchOptions): Promise<Figure[]> {
  const { quick, progress } = options;
  const chainId = FULL_BLOCKS_BENCH_CHAIN_IDS.blocks;
  const watchedTotal = quick ? 100_000 : 1_000_000;
  const accounts = quick ? 20 : 100;
  const receiver = await startArrivalReceiver();
  const chains: DevChain[] = [];
  try {
    chains.push(await startDevChain({ port: 0, chainId }), await startDevChain({ port: 0, chainId }));
    progress(`full blocks: ${accounts * 10} webhooks in ${accounts} accounts on chain ${chainId}, and two anvil nodes readied`);
    const [watched, liveFiller, measuredFiller] = await Promise.all([
      watchedSet(chainId, receiver.url, { accounts, webhooksPerAccount: 10, watchedTotal }, progress),
      BlockFiller.start(chains[0]!.rpcUrl),
      BlockFiller.start(chains[1]!.rpcUrl),
    ]);
    const live = await liveParts(options, chainId, liveFiller, watched, receiver);
    await chains.shift()!.stop();
    const rounds = await followerRounds(options, SECTION, chainId, measuredFiller, watched);
    return [...rounds, ...live];
  } finally {
    await Promise.all(chains.map((chain) => chain.stop()));
    await receiver.close();
  }
}

/** What the live parts share: the node, the loops' notifications as they are recorded and received, and when each transaction was mined. */
interface Live {
  filler: BlockFiller;
  watched: WatchedSet;
  /** The follower's node behind it: when the follower had a block's receipts and traces. */
  proxy: CountingRpcProxy;
  /** Notes when the block's transactions were mined. */
  record: (block: MinedBlock) => MinedBlock;
  mine: (planned: PlannedTransaction[]) => Promise<MinedBlock>;
  /** The notifications received of the blocks' transactions (of those sent to an address `only` takes), each ms from its block mined to its recording and arrival. */
  latencies: (blocks: MinedBlock[], only?: (to: Hex) => boolean) => { recorded: number; received: number }[];
}

/** The follower and delivery loops as `npm start` runs them, one notification to each account first so that every endpoint is known fast, then the live parts. */
async function liveParts(options: BenchOptions, chainId: string, filler: BlockFiller, watched: WatchedSet, receiver: ArrivalReceiver): Promise<Figure[]> {
  await checkpointAtHead(chainId, filler.rpcUrl);
  const queue = newLocalDeliveryQueue();
  const recordedAt = new Map<string, number>();
  const stamping: QueueSender = {
    send: (deliveries) => {
      const now = performance.now();
      for (const { messageId } of deliveries) if (!recordedAt.has(messageId)) recordedAt.set(messageId, now);
      return queue.send(deliveries);
    },
  };
  const proxy = await startCountingRpcProxy(filler.rpcUrl);
  const delivery = startDeliveryLoop(queue);
  const followers = startChainFollowers([devChainSettings(chainId, proxy.url)], stamping);
  const minedAt = new Map<string, number>();
  const record = (block: MinedBlock) => {
    for (const hash of block.transactions.keys()) minedAt.set(hash, block.minedAt);
    return block;
  };
  const live: Live = {
    filler,
    watched,
    proxy,
    record,
    mine: async (planned) => record(await filler.mineBlock(planned)),
    latencies: (blocks, only) => {
      const wanted = new Set(blocks.flatMap((block) => [...block.transactions].filter(([, planned]) => !only || only(planned.to)).map(([hash]) => hash)));
      return [...receiver.arrivals]
        .filter(([, arrival]) => wanted.has(arrival.txHash as Hex))
        .map(([messageId, arrival]) => ({ recorded: recordedAt.get(messageId)! - minedAt.get(arrival.txHash)!, received: arrival.at - minedAt.get(arrival.txHash)! }));
    },
  };
  try {
    options.progress('full blocks: the follower and delivery loops started; one notification to each account first');
    const warmUp = await live.mine([...watched.onePerAccount(), { kind: 'erc20', to: watched.quiet.address }]);
    await waitUntil(() => live.latencies([warmUp]).length === warmUp.transactions.size, 30_000);
    const { figures, last } = await endToEnd(options, live);
    return [...figures, ...(await sustained(options, live, chainId, last))];
  } finally {
    await followers.stop();
    await delivery.stop();
    queue.close();
    await proxy.close();
  }
}

const ms = (value: number) => Math.round(value);

/** 1 000-transaction blocks one at a time, each waited for until its notifications have arrived. */
async function endToEnd({ quick, progress }: BenchOptions, live: Live): Promise<{ figures: Figure[]; last: number }> {
  const count = quick ? 1 : 3;
  const expected = Math.ceil(E2E_SIZE / MATCHING_EVERY);
  progress(`full blocks: ${count} blocks of ${E2E_SIZE} transactions mined one after another, each timed to its ${expected} notifications received`);
  const blocks: MinedBlock[] = [];
  /** Per block, ms from its mining to its receipts and traces in the follower's hands, and to its first notification recorded. */
  const stages: { fetched: number; firstRecorded: number }[] = [];
  for (let index = 0; index < count; index += 1) {
    live.proxy.reset();
    const block = await live.mine(live.watched.plan(E2E_SIZE));
    blocks.push(block);
    await waitUntil(() => live.latencies([block]).length === expected, 30_000);
    const fetchedAt = Math.max(...RECEIPTS_AND_TRACES.map((method) => live.proxy.methods().get(method)?.lastAnsweredAt ?? 0));
    stages.push({ fetched: fetchedAt - block.minedAt, firstRecorded: Math.min(...live.latencies([block]).map((latency) => latency.recorded)) });
  }
  const latencies = live.latencies(blocks);
  const complete = latencies.length === count * expected;
  const series = (key: 'recorded' | 'received') => latencies.map((latency) => latency[key]);
  const worst = (key: 'recorded' | 'received') => (latencies.length ? Math.max(...series(key)) : NaN);
  const name = `${E2E_SIZE}-tx block mined ->`;
  return {
    last: blocks.at(-1)!.number,
    figures: [
      figure(SECTION, `${name} notification recorded, p50`, ms(percentile(series('recorded'), 50)), 'ms', undefined, `${latencies.length} of ${count * expected} notifications of ${count} block${count > 1 ? 's' : ''} received`),
      figure(SECTION, `${name} notification recorded, p99`, ms(percentile(series('recorded'), 99)), 'ms'),
      figure(
        SECTION,
        `${name} all its notifications recorded (worst block)`,
        ms(worst('recorded')),
        'ms',
        { target: `<= ${RECORDED_TARGET_MS}`, pass: complete && worst('recorded') <= RECORDED_TARGET_MS },
        `recorded: written to the store and queued; per block, receipts and traces in hand after ${stages.map((stage) => ms(stage.fetched)).join(', ')} ms, first notification recorded after ${stages.map((stage) => ms(stage.firstRecorded)).join(', ')} ms`,
      ),
      figure(SECTION, `${name} notification received, p50`, ms(percentile(series('received'), 50)), 'ms'),
      figure(SECTION, `${name} notification received, p99`, ms(percentile(series('received'), 99)), 'ms'),
      figure(SECTION, `${name} all its notifications received (worst block)`, ms(worst('received')), 'ms', { target: `<= ${RECEIVED_TARGET_MS}`, pass: complete && worst('received') <= RECEIVED_TARGET_MS }),
    ],
  };
}

/** 300-transaction blocks every 2 s, one transfer of each to the quiet account; the follower's lag sampled from the stored checkpoint meanwhile. */
async function sustained({ quick, progress }: BenchOptions, live: Live, chainId: string, after: number): Promise<Figure[]> {
  const count = quick ? 5 : 15;
  const { quiet } = live.watched;
  progress(`full blocks: ${count} blocks of ${SUSTAINED_SIZE} transactions every ${SUSTAINED_INTERVAL_MS / 1000} s, one of each to the quiet account`);
  const blocks: MinedBlock[] = [];
  let head = after;
  const lags: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      lags.push(head - ((await getCheckpoint(chainId))?.number ?? 0));
      await sleep(250);
    }
  })();
  const started = performance.now();
  for (let index = 0; index < count; index += 1) {
    const planned = [...live.watched.plan(SUSTAINED_SIZE - 1), { kind: 'native' as const, to: quiet.address }];
    const transactions = await live.filler.submit(planned);
    await sleep(started + index * SUSTAINED_INTERVAL_MS - performance.now());
    const block = live.record({ ...(await live.filler.mine(planned.length)), transactions });
    head = block.number;
    blocks.push(block);
  }
  const expected = count * (Math.ceil((SUSTAINED_SIZE - 1) / MATCHING_EVERY) + 1);
  await waitUntil(() => live.latencies(blocks).length === expected, 15_000);
  sampling = false;
  await sampler;
  const quietReceived = live.latencies(blocks, (to) => to === quiet.address).map((latency) => latency.received);
  const all = live.latencies(blocks);
  const maxLag = Math.max(...lags);
  const quietP99 = percentile(quietReceived, 99);
  const spread = (values: number[]) => `p50 ${ms(percentile(values, 50))} / p99 ${ms(percentile(values, 99))} ms`;
  return [
    figure(SECTION, `sustained ${(SUSTAINED_SIZE * 1000) / SUSTAINED_INTERVAL_MS} tx/s (${SUSTAINED_SIZE}-tx blocks every ${SUSTAINED_INTERVAL_MS / 1000} s): follower's lag, max`, maxLag, 'blocks', { target: `<= ${LAG_TARGET}`, pass: maxLag <= LAG_TARGET }, `${count} blocks; the last block mined minus the stored checkpoint every 250 ms, median ${median(lags)}`),
    figure(
      SECTION,
      "sustained: a quiet account's notification, block mined -> received, p99",
      ms(quietP99),
      'ms',
      { target: `<= ${QUIET_TARGET_MS}`, pass: quietReceived.length === count && quietP99 <= QUIET_TARGET_MS },
      `${quietReceived.length} of ${count} received, p50 ${ms(percentile(quietReceived, 50))} ms; every account's ${all.length} of ${expected}: recorded ${spread(all.map((latency) => latency.recorded))}, received ${spread(all.map((latency) => latency.received))}`,
    ),
  ];
}
