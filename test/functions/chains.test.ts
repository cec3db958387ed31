import type { Context } from 'aws-lambda';
import { handler as createHandler } from '../../functions/create-webhook';
import { handler as listChainsHandler } from '../../functions/list-chains';
import { stageSettings } from '../../lib/config/stages';
import { getCheckpoint, moveCheckpoint, putQuarantinedBlock, recordChainHead } from '../../lib/store/chains';
import { useEmbeddedStore } from '../support/embedded-store';
import { apiEvent, randomAccount, webhookInput } from '../support/factories';

// As on AWS: no FOLLOWED_CHAINS, so the stage's followedChains are the followed chains.
useEmbeddedStore();
const context = {} as Context;
const STAGE_CHAINS = stageSettings('local').followedChains;

const listChains = async () => {
  const response = await listChainsHandler(apiEvent({ account: randomAccount() }), context);
  expect(response.statusCode).toBe(200);
  return JSON.parse(response.body).chains as any[];
};

/** The hosted Data API's ChainInfo: what its SDK requires of each chain, and the values its enums allow. */
function expectHostedChainInfo(chain: Record<string, any>) {
  expect(chain).toEqual(
    expect.objectContaining({
      chainId: expect.any(String),
      status: expect.stringMatching(/^(OK|UNAVAILABLE)$/),
      chainName: expect.any(String),
      description: expect.any(String),
      vmName: expect.stringMatching(/^(EVM|BITCOIN|ETHEREUM)$/),
      rpcUrl: expect.any(String),
      isTestnet: expect.any(Boolean),
      networkToken: expect.objectContaining({ name: expect.any(String), symbol: expect.any(String), decimals: expect.any(Number) }),
    }),
  );
  for (const feature of chain.enabledFeatures ?? []) expect(['nftIndexing', 'webhooks', 'teleporter']).toContain(feature);
}

describe('list-chains', () => {
  it("lists the stage's followed chains in the hosted ChainInfo shape, with their public URLs", async () => {
    const chains = await listChains();
    expect(chains.map((chain) => chain.chainId)).toEqual(STAGE_CHAINS);
    for (const chain of chains) expectHostedChainInfo(chain);
    expect(chains.find((chain) => chain.chainId === '43114')).toMatchObject({
      chainName: 'Avalanche (C-Chain)',
      platformChainId: '2q9e4r6Mu3U68nU1fYjgbR6JvwrRx36CohpAX5UQxse55x1Q5',
      rpcUrl: 'https://api.avax.network/ext/bc/C/rpc',
      isTestnet: false,
    });
  });

  it('shows the checkpoint and the head the follower recorded, and the lag between them', async () => {
    const hash = `0x${'cd'.repeat(32)}`;
    await moveCheckpoint('43114', undefined, { number: 100, hash, recent: [{ number: 100, hash }] });
    await recordChainHead('43114', { number: 104, seenAt: Date.now() });
    const chain = (await listChains()).find((listed) => listed.chainId === '43114');
    expect(chain.status).toBe('OK');
    expect(chain.follower).toMatchObject({ checkpointBlock: 100, headBlock: 104, lag: 4, quarantinedBlocks: { count: 0, newest: [] } });
  });

  it('shows the checkpoint as the head while the head recorded is older (the follower records it after the step that moved the checkpoint)', async () => {
    const before = await getCheckpoint('43114');
    const hash = `0x${'ce'.repeat(32)}`;
    expect(await moveCheckpoint('43114', before, { number: 110, hash, recent: [{ number: 110, hash }] })).toBe(true);
    await recordChainHead('43114', { number: 108, seenAt: Date.now() });
    const chain = (await listChains()).find((listed) => listed.chainId === '43114');
    expect(chain.follower).toMatchObject({ checkpointBlock: 110, headBlock: 110, lag: 0 });
  });

  it('shows the count of blocks quarantined whole and the newest 10, newest first, without their reasons; not those of one webhook', async () => {
    const blocks = Array.from({ length: 12 }, (_, index) => ({
      number: 200 + index,
      hash: `0x${(index + 1).toString(16).padStart(64, '0')}`,
      reason: `TypeError: block ${index} cannot be matched`,
      attempts: 5,
      quarantinedAt: 1_795_000_000_000 + index,
    }));
    for (const block of blocks) await putQuarantinedBlock('43114', block);
    // A newer block quarantined for two webhooks of another account alone: their matter, not shown.
    const newer = { ...blocks.at(-1)!, number: 300, quarantinedAt: 1_795_000_001_000, reason: 'TypeError: webhook of another account' };
    for (const webhookId of ['wh-of-another-account-1', 'wh-of-another-account-2']) {
      await putQuarantinedBlock('43114', { ...newer, webhookId, account: 'another-account' });
    }
    const chain = (await listChains()).find((listed) => listed.chainId === '43114');
    expect(chain.follower.quarantinedBlocks).toEqual({
      count: 12,
      newest: blocks.slice(2).reverse().map(({ number, hash, quarantinedAt }) => ({ number, hash, quarantinedAt })),
    });
    expect(JSON.stringify(chain)).not.toMatch(/another.account|attempts|cannot be matched/);
  });

  it('is UNAVAILABLE when the follower has not seen the head for two minutes', async () => {
    await recordChainHead('43113', { number: 7, seenAt: Date.now() - 121_000 });
    const chain = (await listChains()).find((listed) => listed.chainId === '43113');
    expect(chain.status).toBe('UNAVAILABLE');
    expect(chain.follower.headBlock).toBe(7);
  });
});

describe('create-webhook on a chain the stage does not follow', () => {
  it('is a 400 naming the chains the stage follows', async () => {
    const response = await createHandler(apiEvent({ account: randomAccount(), method: 'POST', body: webhookInput({ chainId: '1' }) }), context);
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body)).toEqual({
      message: `Invalid body field chainId: chain 1 is not followed by this service; followed chains: ${STAGE_CHAINS.join(', ')} (GET /v1/chains lists them)`,
      statusCode: 400,
      error: 'Bad Request',
    });
  });
});
