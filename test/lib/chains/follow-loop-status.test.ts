import { Logger } from '@aws-lambda-powertools/logger';
import { followChain } from '../../../lib/chains/follow-loop';
import { devChainSettings } from '../../../lib/config/chains';
import { NO_QUEUE } from '../../../lib/deliveries/queue';
import { getChainHead, getCheckpoint, getFollowerStatus } from '../../../lib/store/chains';
import { useDevChain } from '../../support/dev-chain';
import { useEmbeddedStore } from '../../support/embedded-store';
import { startRpcProxy } from '../../support/rpc-proxy';
import { until } from '../../support/until';

const CHAIN_ID = '31343';
const chain = useDevChain(CHAIN_ID);
useEmbeddedStore();

const head = async () => Number(await chain.rpc<string>('eth_blockNumber'));

test('a follower stuck on a block shows as stalled since the chain went past it, reports the real head meanwhile, and shows as following once its checkpoint moves', async () => {
  // The node answers every call but one: the block after the checkpoint, held until the test lets it go.
  let stuckOn: number | undefined;
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const proxy = await startRpcProxy(chain.rpcUrl(), {
    answer: async (call, fromNode) => {
      if (call.method === 'eth_getBlockByNumber' && call.params[1] === true && Number(call.params[0]) === stuckOn) await released;
      return fromNode;
    },
  });
  const stop = new AbortController();
  const following = followChain(
    { ...devChainSettings(CHAIN_ID, proxy.url), pollIntervalMs: 50 },
    { leaseMs: 30_000, signal: stop.signal, log: new Logger({ logLevel: 'SILENT' }), queue: NO_QUEUE, stalledAfterMs: 1_000, headPollMs: 100 },
  );
  try {
    await chain.rpc('anvil_mine', ['0x1']);
    const taken = await head();
    await until('the follower is at the head', 10_000, () => getCheckpoint(CHAIN_ID), (checkpoint) => checkpoint?.number === taken);
    expect(await getFollowerStatus(CHAIN_ID)).toMatchObject({ state: 'following', rpc: 'public' });

    stuckOn = taken + 1;
    const wentPast = Date.now();
    await chain.rpc('anvil_mine', ['0x5']);
    const stalled = (await until('the follower shows as stalled', 10_000, () => getFollowerStatus(CHAIN_ID), (status) => status?.state === 'stalled'))!;
    expect(stalled.stalledSince).toBeGreaterThanOrEqual(wentPast);
    expect(stalled.recordedAt - stalled.stalledSince!).toBeGreaterThanOrEqual(1_000);
    // The head comes from the poll beside the stuck step: recorded within its 5 s interval, the real one.
    await until('the real head is recorded', 10_000, () => getChainHead(CHAIN_ID), (recorded) => recorded?.number === taken + 5);
    expect((await getCheckpoint(CHAIN_ID))!.number).toBe(taken);
    expect((await getFollowerStatus(CHAIN_ID))!.state).toBe('stalled');

    stuckOn = undefined;
    release();
    const moved = (await until('the follower follows again', 10_000, () => getFollowerStatus(CHAIN_ID), (status) => status?.state === 'following'))!;
    expect(moved.stalledSince).toBeUndefined();
    expect((await getCheckpoint(CHAIN_ID))!.number).toBe(taken + 5);
  } finally {
    release();
    stop.abort();
    await following;
    await proxy.close();
  }
}, 40_000);

test("a stall outlives the follower's run: the next run (a Lambda's next minute) goes on counting from when the chain went past the checkpoint", async () => {
  // The block after the checkpoint is one the node answers `null` for (a node behind on it): every step fails at once, and a run ends when told.
  let stuckOn: number | undefined;
  const proxy = await startRpcProxy(chain.rpcUrl(), {
    answer: (call, fromNode) => (call.method === 'eth_getBlockByNumber' && call.params[1] === true && Number(call.params[0]) === stuckOn ? { ...fromNode, result: null } : fromNode),
  });
  const settings = { ...devChainSettings(CHAIN_ID, proxy.url), pollIntervalMs: 50 };
  const run = (deadline?: number) => {
    const stop = new AbortController();
    const options = { leaseMs: 30_000, signal: stop.signal, log: new Logger({ logLevel: 'SILENT' }), queue: NO_QUEUE, stalledAfterMs: 3_000, headPollMs: 100, deadline };
    return { done: followChain(settings, options), stop: () => stop.abort() };
  };
  const first = run();
  let second: ReturnType<typeof run> | undefined;
  try {
    const taken = (await until('the follower is at the head', 10_000, () => getCheckpoint(CHAIN_ID), (checkpoint) => checkpoint !== undefined))!.number;
    stuckOn = taken + 1;
    const wentPast = Date.now();
    await chain.rpc('anvil_mine', ['0x2']);
    await until('the first run records that it is behind', 10_000, () => getFollowerStatus(CHAIN_ID), (status) => status?.behind !== undefined);
    // The first run ends before the stall is due, as a Lambda's minute does; the next one starts.
    first.stop();
    await first.done;
    const secondStarted = Date.now();
    second = run();
    const stalled = (await until('the next run shows the stall', 10_000, () => getFollowerStatus(CHAIN_ID), (status) => status?.state === 'stalled'))!;
    expect(stalled.stalledSince).toBeGreaterThanOrEqual(wentPast);
    expect(stalled.stalledSince).toBeLessThan(secondStarted);
  } finally {
    first.stop();
    second?.stop();
    await Promise.all([first.done, second?.done]);
    await proxy.close();
  }
}, 40_000);
