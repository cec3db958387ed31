import { Logger } from '@aws-lambda-powertools/logger';
import { faultKind } from '../../../lib/chains/faults';
import { followChain } from '../../../lib/chains/follow-loop';
import { checkNodeChain, WrongChainError } from '../../../lib/chains/node-identity';
import { ChainNode } from '../../../lib/chains/rpc';
import { devChainSettings } from '../../../lib/config/chains';
import { NO_QUEUE } from '../../../lib/deliveries/queue';
import { getChainHead, getCheckpoint, getFollowerStatus } from '../../../lib/store/chains';
import { useDevChain } from '../../support/dev-chain';
import { useEmbeddedStore } from '../../support/embedded-store';
import { startRpcProxy } from '../../support/rpc-proxy';
import { until } from '../../support/until';

const CHAIN_ID = '31344';
const chain = useDevChain(CHAIN_ID);
useEmbeddedStore();

/** anvil's default chain: what a node of another chain answers here. */
const OTHER_CHAIN_HEX = '0x7a69';

describe('checkNodeChain', () => {
  it("resolves for the node of the configured chain and throws WrongChainError naming both ids for another's", async () => {
    const node = new ChainNode(chain.rpcUrl(), 'off' as never);
    await expect(checkNodeChain(node, CHAIN_ID)).resolves.toBeUndefined();
    const wrong = await checkNodeChain(node, '43114').catch((error: unknown) => error);
    expect(wrong).toBeInstanceOf(WrongChainError);
    expect(faultKind(wrong)).toBe(`wrong chain: node answers chain ${CHAIN_ID}, configured 43114`);
  });
});

test('a node of another chain stops its follower, with one error log naming both ids and the state stopped, and is followed once it answers the configured chain', async () => {
  let lying = true;
  const methods: string[] = [];
  const proxy = await startRpcProxy(chain.rpcUrl(), {
    answer: (call, fromNode) => {
      methods.push(call.method);
      return lying && call.method === 'eth_chainId' ? { ...fromNode, result: OTHER_CHAIN_HEX } : fromNode;
    },
  });
  const log = new Logger({ logLevel: 'SILENT' });
  const error = jest.spyOn(log, 'error');
  const info = jest.spyOn(log, 'info');
  const stop = new AbortController();
  // A user's node, its key in the URL: configured, never shown.
  const settings = { ...devChainSettings(CHAIN_ID, `${proxy.url}/v2/provider-key-31344`), publicRpcUrl: '', pollIntervalMs: 50 };
  const following = followChain(settings, { leaseMs: 30_000, signal: stop.signal, log, queue: NO_QUEUE, headPollMs: 100, wrongChainRecheckMs: 200 });
  try {
    const stopped = await until('the follower shows as stopped', 10_000, () => getFollowerStatus(CHAIN_ID), (status) => status?.state === 'stopped');
    expect(stopped).toMatchObject({ rpc: 'configured', lastError: { kind: `wrong chain: node answers chain 31337, configured ${CHAIN_ID}` } });
    await chain.rpc('anvil_mine', ['0x2']);
    await until('the node was asked again', 5_000, async () => methods.filter((method) => method === 'eth_chainId').length, (asked) => asked >= 4);
    // No step: nothing but its chain id (and, before the first answer to that, its head) was asked of the node.
    expect(methods.filter((method) => method !== 'eth_chainId' && method !== 'eth_blockNumber')).toEqual([]);
    expect(await getCheckpoint(CHAIN_ID)).toBeUndefined();
    expect(await getChainHead(CHAIN_ID)).toBeUndefined();
    expect(error.mock.calls).toEqual([
      [
        'the node is not the configured chain: nothing of it is followed until it is',
        expect.objectContaining({ chainId: CHAIN_ID, nodeChainId: '31337', error: `wrong chain: node answers chain 31337, configured ${CHAIN_ID}` }),
      ],
    ]);

    lying = false;
    await until('the follower takes the chain', 10_000, () => getCheckpoint(CHAIN_ID), (checkpoint) => checkpoint !== undefined);
    const resumed = (await until('the follower shows as following', 10_000, () => getFollowerStatus(CHAIN_ID), (status) => status?.state === 'following'))!;
    // The last failure stays shown, with its time, after the node is right.
    expect(resumed.lastError).toMatchObject({ kind: `wrong chain: node answers chain 31337, configured ${CHAIN_ID}` });
    expect(info).toHaveBeenCalledWith('the node answers the configured chain now; following it', { chainId: CHAIN_ID });
    expect(error).toHaveBeenCalledTimes(1);
    expect(JSON.stringify([error.mock.calls, info.mock.calls, resumed])).not.toContain('provider-key');
  } finally {
    stop.abort();
    await following;
    await proxy.close();
  }
}, 40_000);
