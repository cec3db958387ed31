import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Logger } from '@aws-lambda-powertools/logger';
import { followChain } from '../../../lib/chains/follow-loop';
import { ChainFollower } from '../../../lib/chains/follower';
import { ChainNode } from '../../../lib/chains/rpc';
import { devChainSettings } from '../../../lib/config/chains';
import { NO_QUEUE } from '../../../lib/deliveries/queue';
import { getCheckpoint, getFollowerStatus } from '../../../lib/store/chains';
import { useDevChain } from '../../support/dev-chain';
import { useEmbeddedStore } from '../../support/embedded-store';
import { startRpcProxy } from '../../support/rpc-proxy';
import { until } from '../../support/until';

const CHAIN_ID = '31345';
const chain = useDevChain(CHAIN_ID);
useEmbeddedStore();

/** A loopback port nothing listens on: connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function follow(rpcUrl: string, log: Logger) {
  const stop = new AbortController();
  const following = followChain(
    { ...devChainSettings(CHAIN_ID, rpcUrl), pollIntervalMs: 50 },
    { leaseMs: 30_000, signal: stop.signal, log, queue: NO_QUEUE, headPollMs: 100 },
  );
  return async () => {
    stop.abort();
    await following;
  };
}

afterEach(() => jest.restoreAllMocks());

test('a node that refuses connections is logged once with its cause, not at every try, and shows as unreachable', async () => {
  const port = await closedPort();
  const asked = jest.spyOn(ChainNode.prototype, 'request');
  const log = new Logger({ logLevel: 'SILENT' });
  const error = jest.spyOn(log, 'error');
  const stop = follow(`http://127.0.0.1:${port}/`, log);
  try {
    // Each try asks the node which chain it is first; the pauses between tries grow from 0.5 s.
    await until('the follower tried four times', 10_000, async () => asked.mock.calls.length, (tries) => tries >= 4);
    const status = (await until('the follower shows as unreachable', 5_000, () => getFollowerStatus(CHAIN_ID), (recorded) => recorded?.state === 'unreachable'))!;
    expect(status.lastError).toEqual({ kind: 'connection refused (ECONNREFUSED)', since: expect.any(Number), at: expect.any(Number) });
  } finally {
    await stop();
  }
  expect(error.mock.calls).toEqual([['chain follower step failed', expect.objectContaining({ chainId: CHAIN_ID, cause: 'connection refused (ECONNREFUSED)' })]]);
  expect(JSON.stringify(error.mock.calls)).not.toContain(String(port));
}, 30_000);

test('a failing node is logged when its failures begin, when their cause changes and when it answers again, and the chain is checked once it is back', async () => {
  let answer: 'forward' | 'destroy' | number = 'forward';
  const methods: string[] = [];
  const proxy = await startRpcProxy(chain.rpcUrl(), {
    onRequest: () => answer,
    answer: (call, fromNode) => {
      methods.push(call.method);
      return fromNode;
    },
  });
  const steps = jest.spyOn(ChainFollower.prototype, 'step');
  const log = new Logger({ logLevel: 'SILENT' });
  const error = jest.spyOn(log, 'error');
  const info = jest.spyOn(log, 'info');
  const stop = follow(proxy.url, log);
  try {
    await until('the follower has a checkpoint', 10_000, () => getCheckpoint(CHAIN_ID), (checkpoint) => checkpoint !== undefined);
    answer = 503;
    const stepsBefore = steps.mock.calls.length;
    await until('three steps failed', 10_000, async () => steps.mock.calls.length - stepsBefore, (failed) => failed >= 3);
    expect(error.mock.calls).toEqual([['chain follower step failed', expect.objectContaining({ cause: 'HTTP status 503' })]]);

    answer = 'destroy';
    await until('the change of cause is logged', 15_000, async () => error.mock.calls.length, (logged) => logged === 2);
    expect(error.mock.calls[1]).toEqual([
      'chain follower step failed',
      expect.objectContaining({ cause: 'connection closed by the node (UND_ERR_SOCKET)', previously: 'HTTP status 503', failedSteps: expect.any(Number) }),
    ]);

    const forwardedBefore = methods.length;
    answer = 'forward';
    await until('the recovery is logged', 15_000, async () => info.mock.calls.filter(([message]) => message === 'node answering again'), (logged) => logged.length > 0);
    expect(info.mock.calls.filter(([message]) => message === 'node answering again')).toEqual([
      ['node answering again', expect.objectContaining({ chainId: CHAIN_ID, afterSeconds: expect.any(Number), cause: 'connection closed by the node (UND_ERR_SOCKET)' })],
    ]);
    // A node that was out of reach may be another one: asked its chain again once it answers. (Not
    // necessarily first of what the proxy forwards: a request of the last failed step may still be retried.)
    expect(methods.slice(forwardedBefore)).toContain('eth_chainId');
    expect(await getFollowerStatus(CHAIN_ID)).toMatchObject({ lastError: { kind: 'connection closed by the node (UND_ERR_SOCKET)' } });
  } finally {
    await stop();
    await proxy.close();
  }
  expect(error).toHaveBeenCalledTimes(2);
}, 60_000);
