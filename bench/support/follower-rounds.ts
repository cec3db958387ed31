import { setTimeout as sleep } from 'node:timers/promises';
import { newLocalDeliveryQueue } from '../../infra/local/background-work';
import { localLogger } from '../../infra/local/local-logger';
import { ChainFollower } from '../../lib/chains/follower';
import type { Hex } from '../../lib/chains/rpc-types';
import { devChainSettings } from '../../lib/config/chains';
import { getCheckpoint, moveCheckpoint } from '../../lib/store/chains';
import { rpcCall, type BlockFiller } from './block-filler';
import { CountingQueue } from './counting-queue';
import { figure, median, type BenchOptions, type Figure } from './report';
import { startCountingRpcProxy } from './rpc-counter';
import { instrumentDynamoDb } from './store';
import { MATCHING_EVERY, type WatchedSet } from './watched-blocks';

/** Blocks of `size` transactions, `blocksPerRound` of them taken in each of `rounds` rounds. */
interface BlockSize {
  size: number;
  rounds: number;
  blocksPerRound: number;
}

/**
 * A round is a rate, not one run's latency: long enough that the follower fetches a run while it
 * records the last, as it does catching up (a run is one block of 300 transactions or more).
 */
const FULL_SIZES: BlockSize[] = [
  { size: 300, rounds: 3, blocksPerRound: 6 },
  { size: 1000, rounds: 3, blocksPerRound: 1 },
  { size: 3000, rounds: 1, blocksPerRound: 1 },
];
/** Quick runs leave out the 3 000-transaction block: anvil alone takes some 12 s over its receipts. */
const QUICK_SIZES: BlockSize[] = [
  { size: 300, rounds: 1, blocksPerRound: 4 },
  { size: 1000, rounds: 1, blocksPerRound: 1 },
];
const TARGET = 0.7;
/** A follower that has not taken a round's blocks within this many times the floor's time (and at least BUDGET_MIN_MS) is left on them. */
const BUDGET_FLOORS = 3;
const BUDGET_MIN_MS = 10_000;
/** What a follower asks for, after a block itself, to have all of a block: its receipts and its traces. */
export const RECEIPTS_AND_TRACES = ['eth_getBlockReceipts', 'eth_getTransactionReceipt', 'trace_block', 'debug_traceBlockByHash', 'debug_traceTransaction'];

interface Round {
  blocks: number;
  transactions: number;
  floorMs: number;
  /** Absent when the follower had not taken the blocks within `budgetMs`. */
  followerMs?: number;
  budgetMs: number;
  /** From the first step's start to the last answer of a block's data. */
  fetchMs: number;
  notified: number;
  expected: number;
  errors: string[];
  /** The follower's JSON-RPC calls by method. */
  rpcCalls: Map<string, number>;
  /** The node's slowest answer to the floor by method (one call a request): how long it takes over each. */
  floorSlowestMs: Map<string, number>;
  httpRequests: number;
  store: Map<string, number>;
  queueRequests: number;
}

const hex = (value: number) => `0x${value.toString(16)}` as Hex;

/** Moves the chain's checkpoint to the node's latest block: a follower goes on from the block after it. */
export async function checkpointAtHead(chainId: string, rpcUrl: string): Promise<number> {
  const block = await rpcCall<{ number: Hex; hash: Hex }>(rpcUrl, 'eth_getBlockByNumber', ['latest', false]);
  const at = { number: Number(block.number), hash: block.hash };
  if (!(await moveCheckpoint(chainId, await getCheckpoint(chainId), { ...at, recent: [at] }))) throw new Error(`the checkpoint of chain ${chainId} moved while it was set`);
  return at.number;
}

/** The floor: the blocks, their receipts and their traces (parity's trace_block, the fastest anvil has), all blocks at once, nothing else. */
async function fetchAlone(rpcUrl: string, numbers: number[]): Promise<void> {
  await Promise.all(
    numbers.map(async (number) => {
      const block = await rpcCall<{ hash: Hex }>(rpcUrl, 'eth_getBlockByNumber', [hex(number), true]);
      await Promise.all([rpcCall(rpcUrl, 'eth_getBlockReceipts', [block.hash]), rpcCall(rpcUrl, 'trace_block', [hex(number)])]);
    }),
  );
}

/**
 * The follower (ChainFollower, as `npm start` and the follower function build it, with the real
 * store and a queue that counts) stepping over rounds of full blocks from the checkpoint just before
 * them, each round's blocks first fetched alone over the same counting proxy. Steps that fail are
 * taken again, as the follow loop does, until the round's budget is spent; a follower still on its
 * blocks then is left there and no round comes after (the node is stopped by the caller).
 */
export async function followerRounds({ quick, progress }: BenchOptions, section: string, chainId: string, filler: BlockFiller, watched: WatchedSet): Promise<Figure[]> {
  const proxy = await startCountingRpcProxy(filler.rpcUrl);
  const localQueue = newLocalDeliveryQueue();
  const queue = new CountingQueue(localQueue);
  const counter = instrumentDynamoDb();
  const figures: Figure[] = [];
  try {
    await checkpointAtHead(chainId, filler.rpcUrl);
    const follower = new ChainFollower(devChainSettings(chainId, proxy.url), localLogger, queue);
    let stuck = false;
    for (const { size, rounds, blocksPerRound } of quick ? QUICK_SIZES : FULL_SIZES) {
      const done: Round[] = [];
      for (let index = 0; index < rounds && !stuck; index += 1) {
        progress(`full blocks: round ${index + 1} of ${rounds}: ${blocksPerRound} block${blocksPerRound > 1 ? 's' : ''} of ${size} transactions, fetched alone, then taken by the follower`);
        const blocks = [];
        for (let block = 0; block < blocksPerRound; block += 1) blocks.push(await filler.mineBlock(watched.plan(size)));
        proxy.reset();
        let started = performance.now();
        await fetchAlone(proxy.url, blocks.map((block) => block.number));
        const floorMs = performance.now() - started;
        const floorSlowestMs = new Map([...proxy.methods()].map(([method, counts]) => [method, counts.slowestMs]));
        const budgetMs = Math.max(BUDGET_MIN_MS, BUDGET_FLOORS * floorMs);

        proxy.reset();
        counter.reset();
        queue.reset();
        const errors: string[] = [];
        let abandoned = false;
        started = performance.now();
        const stepping = (async () => {
          while (!abandoned) {
            try {
              const result = await follower.step();
              if (result.caughtUp) return true;
            } catch (error) {
              errors.push((error as Error).message.split('\n')[0]!.slice(0, 120));
              await sleep(250);
            }
          }
          return false;
        })();
        const budget = new AbortController();
        const finished = await Promise.race([stepping, sleep(budgetMs, false, { signal: budget.signal }).catch(() => false)]);
        budget.abort();
        const followerMs = performance.now() - started;
        if (!finished) {
          abandoned = stuck = true;
          void stepping.catch(() => undefined);
        }
        const rpc = proxy.methods();
        const fetchedAt = Math.max(started, ...RECEIPTS_AND_TRACES.map((method) => rpc.get(method)?.lastAnsweredAt ?? 0));
        done.push({
          blocks: blocks.length,
          transactions: blocks.length * size,
          floorMs,
          followerMs: finished ? followerMs : undefined,
          budgetMs,
          fetchMs: fetchedAt - started,
          // Not the steps' `notifications`: every message of these blocks is new, and each is queued once.
          notified: queue.counts.sentEntries,
          expected: blocks.length * Math.ceil(size / MATCHING_EVERY),
          errors,
          rpcCalls: new Map([...rpc].map(([method, counts]) => [method, counts.calls])),
          floorSlowestMs,
          httpRequests: proxy.httpRequests(),
          store: addUp(counter.calls.map((call) => new Map([[call.command.replace(/Command$/, ''), 1]]))),
          queueRequests: queue.counts.sendRequests,
        });
      }
      if (done.length > 0) figures.push(...sizeFigures(section, size, done));
      else figures.push(figure(section, ratioName(size), 0, 'x', { target: `>= ${TARGET}`, pass: false }, 'not run: the follower was left on an earlier block'));
    }
  } finally {
    counter.stop();
    await proxy.close();
    localQueue.close();
  }
  return figures;
}

const ratioName = (size: number) => `follower vs fetching alone, ${size}-tx blocks (transactions/s)`;

/** The maps' values added up by key (or combined by `combine`). */
function addUp(maps: Map<string, number>[], combine = (a: number, b: number) => a + b): Map<string, number> {
  const total = new Map<string, number>();
  for (const map of maps) for (const [key, value] of map) total.set(key, total.has(key) ? combine(total.get(key)!, value) : value);
  return total;
}

function sizeFigures(section: string, size: number, rounds: Round[]): Figure[] {
  const finished = rounds.filter((round) => round.followerMs !== undefined);
  const ratios = finished.map((round) => round.floorMs / round.followerMs!);
  const unfinished = rounds.find((round) => round.followerMs === undefined);
  const ratio = unfinished ? unfinished.floorMs / unfinished.budgetMs : median(ratios);
  const complete = !unfinished && rounds.every((round) => round.notified === round.expected);
  const rate = (round: Round, ms: number) => Math.round(round.transactions / (ms / 1000));
  const last = finished.at(-1);
  const detail = [
    last && `${rate(last, last.followerMs!)} tx/s against ${rate(last, last.floorMs)} tx/s (the last round)`,
    finished.some((round) => round.errors.length > 0) && `steps failed and taken again: ${finished.map((round) => round.errors.length).join(', ')}`,
    unfinished && `not taken within ${(unfinished.budgetMs / 1000).toFixed(0)} s (the floor: ${(unfinished.floorMs / 1000).toFixed(1)} s); errors: ${[...addUp(unfinished.errors.map((error) => new Map([[error, 1]])))].map(([error, times]) => `${times}x ${error}`).join('; ') || 'none'}`,
    finished.length > 0 && `rounds ${ratios.map((value) => value.toFixed(2)).join(', ')}`,
    finished.length > 0 && `receipts and traces in hand after ${finished.map((round) => Math.round(round.fetchMs)).join(', ')} ms of ${finished.map((round) => Math.round(round.followerMs!)).join(', ')} ms`,
    `notifications queued ${rounds.map((round) => `${round.notified}/${round.expected}`).join(', ')}`,
  ].filter(Boolean);
  const blocks = rounds.reduce((total, round) => total + round.blocks, 0);
  const perBlock = (value: number) => Math.round((value / blocks) * 10) / 10;
  const total = (counts: Map<string, number>) => [...counts.values()].reduce((sum, value) => sum + value, 0);
  const byName = (counts: Map<string, number>, format = (value: number) => String(perBlock(value))) => [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([name, value]) => `${name} ${format(value)}`).join(', ');
  const calls = addUp(rounds.map((round) => round.rpcCalls));
  const store = addUp(rounds.map((round) => round.store));
  const floorSlowest = addUp(rounds.map((round) => round.floorSlowestMs), Math.max);
  return [
    figure(section, ratioName(size), Math.round(ratio * 100) / 100, 'x', { target: `>= ${TARGET}`, pass: complete && ratio >= TARGET }, detail.join('; ')),
    figure(
      section,
      `follower's RPC calls per ${size}-tx block`,
      perBlock(total(calls)),
      'calls',
      undefined,
      `${byName(calls)}; in ${perBlock(rounds.reduce((sum, round) => sum + round.httpRequests, 0))} HTTP requests; the node's slowest answer to the floor: ${byName(floorSlowest, (value) => `${Math.round(value)} ms`)}`,
    ),
    figure(section, `follower's store requests per ${size}-tx block`, perBlock(total(store)), 'requests', undefined, `${byName(store)}; SQS send requests ${perBlock(rounds.reduce((sum, round) => sum + round.queueRequests, 0))}`),
  ];
}
