import { createServer, type AddressInfo } from 'node:net';
import { AvaCloudSDK } from '@avalabs/avacloud-sdk';
import { HTTPClient } from '@avalabs/avacloud-sdk/lib/http';
import { devChainSettings } from '../../lib/config/chains';
import { putQuarantinedBlock, recordFollowerStatus } from '../../lib/store/chains';
import { useDevChain } from '../support/dev-chain';
import { webhookInput } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { startRpcProxy, type RpcProxy } from '../support/rpc-proxy';
import { until } from '../support/until';
import { expectError } from './support/expectations';

const DEV_CHAIN_ID = '31337';
/** A provider's URL, with its key in the path: never shown. */
const PROVIDER_KEY = 'provider-key-7f3a9c';
const chain = useDevChain(DEV_CHAIN_ID);
// As a user would configure them: Fuji (known: its public URL is shown) at a "provider" whose node is
// really the dev chain (31337), and a chain of no known endpoint at a provider that refuses connections.
const env = { CHAIN_RPC_URLS: '', CHAIN_CONFIRMATIONS: '99999=1' };
let provider: RpcProxy | undefined;
beforeAll(async () => {
  provider = await startRpcProxy(chain.rpcUrl());
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as AddressInfo;
  await new Promise((resolve) => closed.close(resolve));
  env.CHAIN_RPC_URLS = `43113=${provider.url}/ext/bc/C/rpc/${PROVIDER_KEY},99999=http://127.0.0.1:${port}/${PROVIDER_KEY}`;
});
afterAll(() => provider?.close());
const client = useLocalService(env, () => ({ chains: [devChainSettings(DEV_CHAIN_ID, chain.rpcUrl())] }));

async function listChains(key: string) {
  const response = await client.call('GET', '/v1/chains', { key });
  expect(response.status).toBe(200);
  return response;
}

const chainOf = (body: any, chainId: string) => body.chains.find((listed: { chainId: string }) => listed.chainId === chainId);

/** The dev chain as listed once its follower has taken `block` (the test's timeout bounds the wait). */
async function devChainFollowedPast(key: string, block: number) {
  for (;;) {
    const listed = chainOf((await listChains(key)).body, DEV_CHAIN_ID);
    if (listed.follower.checkpointBlock >= block) return listed;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('GET /v1/chains', () => {
  it('lists every followed chain in the hosted ListChainsResponse shape', async () => {
    const { body } = await listChains(await client.keyFor('chains-list'));
    expect(body.chains.map((listed: { chainId: string }) => listed.chainId).sort()).toEqual(['1', '31337', '43113', '43114', '99999']);
    expect(chainOf(body, '43113')).toMatchObject({
      chainName: 'Avalanche Fuji (C-Chain)',
      isTestnet: true,
      vmName: 'EVM',
      platformChainId: 'yH8D7ThNJkxmtkuv2jgBa4P1Rn3Qpr4pPr7QYNfcdoS6k6HWp',
      networkToken: { name: 'Avalanche', symbol: 'AVAX', decimals: 18 },
      enabledFeatures: ['webhooks'],
    });
  });

  it("shows a chain's public URL or an empty one, and whether the follower uses a configured URL, never that URL", async () => {
    const key = await client.keyFor('chains-urls');
    // Once every follower has said what it uses (and why it fails): nothing of that is a URL.
    const { body } = await until('every follower reported', 10_000, () => listChains(key), ({ body }) =>
      [DEV_CHAIN_ID, '43113', '99999'].every((chainId) => chainOf(body, chainId).follower.rpc),
    );
    expect(chainOf(body, '43113')).toMatchObject({ rpcUrl: 'https://api.avax-test.network/ext/bc/C/rpc', follower: { rpc: 'configured' } });
    expect(chainOf(body, '99999')).toMatchObject({ rpcUrl: '', follower: { rpc: 'configured' } });
    expect(chainOf(body, DEV_CHAIN_ID)).toMatchObject({ rpcUrl: chain.rpcUrl(), follower: { rpc: 'public' } });
    expect(JSON.stringify(body)).not.toContain(PROVIDER_KEY);
    expect(JSON.stringify(body)).not.toContain(provider!.url);
  });

  it('shows a chain whose configured node is another chain as stopped, naming both chain ids, and never takes its blocks', async () => {
    const key = await client.keyFor('chains-wrong-node');
    const { body } = await until('the follower of 43113 stopped', 10_000, () => listChains(key), ({ body }) => chainOf(body, '43113').follower.state === 'stopped');
    const listed = chainOf(body, '43113');
    expect(listed.status).toBe('UNAVAILABLE');
    expect(listed.follower).toEqual({
      state: 'stopped',
      lastError: { kind: `wrong chain: node answers chain ${DEV_CHAIN_ID}, configured 43113`, since: expect.any(Number), at: expect.any(Number) },
      rpc: 'configured',
      quarantinedBlocks: { count: 0, newest: [] },
    });
  });

  it("shows the follower's checkpoint, the head it last saw and the lag once a block is taken", async () => {
    const key = await client.keyFor('chains-follower');
    const from = await chain.fundedAddress();
    const receipt = await chain.send({ from, to: from, value: 1n });
    const listed = await devChainFollowedPast(key, Number(receipt.blockNumber));
    expect(listed.status).toBe('OK');
    expect(listed.follower.state).toBe('following');
    expect(listed.follower.headBlock).toBeGreaterThanOrEqual(listed.follower.checkpointBlock);
    expect(listed.follower.lag).toBe(listed.follower.headBlock - listed.follower.checkpointBlock);
    expect(listed.follower.headSeenAt).toEqual(expect.any(Number));
  });

  it('lists a chain whose node never answered as UNAVAILABLE and unreachable, with the cause and without block numbers', async () => {
    const key = await client.keyFor('chains-unavailable');
    const { body } = await until('the follower of 99999 reported', 10_000, () => listChains(key), ({ body }) => chainOf(body, '99999').follower.state === 'unreachable');
    const listed = chainOf(body, '99999');
    expect(listed.status).toBe('UNAVAILABLE');
    expect(listed.follower).toEqual({
      state: 'unreachable',
      lastError: { kind: 'connection refused (ECONNREFUSED)', since: expect.any(Number), at: expect.any(Number) },
      rpc: 'configured',
      quarantinedBlocks: { count: 0, newest: [] },
    });
  });

  it('shows a follower that reported itself stalled with since when, and one that stopped reporting as not running', async () => {
    // Chain 1 has no follower here: its status is what a follower recorded (test/lib/chains/follow-loop-status.test.ts makes one stall for real).
    const key = await client.keyFor('chains-stalled');
    const stalledSince = Date.now() - 90_000;
    const lastError = { kind: 'timeout', since: stalledSince, at: Date.now() - 1_000 };
    await recordFollowerStatus('1', { state: 'stalled', stalledSince, lastError, traceMethod: 'debug_traceBlockByHash', rpc: 'public', recordedAt: Date.now() });
    expect(chainOf((await listChains(key)).body, '1').follower).toMatchObject({ state: 'stalled', stalledSince, lastError, traceMethod: 'debug_traceBlockByHash', rpc: 'public' });
    await recordFollowerStatus('1', { state: 'stalled', stalledSince, lastError, rpc: 'public', recordedAt: Date.now() - 121_000 });
    const notRunning = chainOf((await listChains(key)).body, '1').follower;
    expect(notRunning).toMatchObject({ state: 'notRunning', lastError });
    expect(notRunning.stalledSince).toBeUndefined();
  });

  it("shows a chain's quarantined blocks by number, hash and time, never their reason; never one webhook's", async () => {
    const reason = 'TypeError: the block cannot be matched';
    const block = { number: 12, hash: `0x${'ab'.repeat(32)}`, reason, attempts: 5, quarantinedAt: Date.now() };
    await putQuarantinedBlock('1', block);
    const ofOneWebhook = { ...block, number: 13, reason: 'ValidationException: webhook of another account', account: 'another-account' };
    for (const webhookId of ['wh-of-another-account-1', 'wh-of-another-account-2']) await putQuarantinedBlock('1', { ...ofOneWebhook, webhookId });
    const listed = chainOf((await listChains(await client.keyFor('chains-quarantine'))).body, '1');
    expect(listed.follower.quarantinedBlocks).toEqual({ count: 1, newest: [{ number: 12, hash: block.hash, quarantinedAt: block.quarantinedAt }] });
    expect(JSON.stringify(listed)).not.toMatch(/another account|another-account|attempts|cannot be matched/);
  });

  it("parses with the hosted SDK's data.evm.chains.list()", async () => {
    const key = await client.keyFor('chains-hosted-sdk');
    // The Data API's operations carry their own server: it is overridden per call, and the fetcher sends only to this service.
    const httpClient = new HTTPClient({
      fetcher: (input, init) => {
        const request = new Request(input, init);
        if (!request.url.startsWith(`${client.url()}/`)) throw new Error(`the SDK asked for ${request.url}`);
        request.headers.set('x-service-api-key', key);
        return fetch(request);
      },
    });
    const sdk = new AvaCloudSDK({ serverURL: client.url(), httpClient });
    const { chains } = await sdk.data.evm.chains.list({}, { serverURL: client.url() });
    expect(chains.map((listed) => listed.chainId).sort()).toEqual(['1', '31337', '43113', '43114', '99999']);
    expect(chains.find((listed) => listed.chainId === '43113')).toMatchObject({ chainName: 'Avalanche Fuji (C-Chain)', isTestnet: true });
  });

  it('needs an API key', async () => {
    expect((await client.call('GET', '/v1/chains')).status).toBe(401);
  });
});

describe('a webhook on a chain that is not followed', () => {
  it('is refused at create with a 400 that names the followed chains', async () => {
    const response = await client.call('POST', '/v1/webhooks', { key: await client.keyFor('chains-refused'), body: webhookInput({ chainId: '137' }) });
    expect(expectError(response, 400, 'chainId')).toBe(
      'Invalid body field chainId: chain 137 is not followed by this service; followed chains: 43113, 99999, 31337, 43114, 1 (GET /v1/chains lists them)',
    );
  });

  it('is created on a followed chain', async () => {
    const response = await client.call('POST', '/v1/webhooks', { key: await client.keyFor('chains-accepted'), body: webhookInput({ chainId: '43113' }) });
    expect(response.status).toBe(201);
  });
});
