import { Logger } from '@aws-lambda-powertools/logger';
import { ChainFollower } from '../../../lib/chains/follower';
import { ChainNode, LaggingNodeError } from '../../../lib/chains/rpc';
import { devChainSettings, encodeFollowedChains, FOLLOWED_CHAINS_VARIABLE, publicFactsOf } from '../../../lib/config/chains';
import { createWebhookBody } from '../../../lib/schemas/webhook';
import { getCheckpoint, moveCheckpoint } from '../../../lib/store/chains';
import { tableName } from '../../../lib/store/client';
import { getItem, putItem } from '../../../lib/store/items';
import { recordedMessages } from '../../support/recorded-messages';
import { chainCheckpointKey } from '../../../lib/store/table';
import { createWebhook } from '../../../lib/webhooks/webhooks';
import { useDevChain } from '../../support/dev-chain';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../../support/factories';
import { startRpcProxy, type RpcProxy } from '../../support/rpc-proxy';
import { NO_QUEUE } from '../../../lib/deliveries/queue';

// One anvil behind a proxy that plays a node behind; each test follows it under a chain id of its own.
const CHAIN_IDS = Array.from({ length: 10 }, (_, index) => String(31360 + index));
const chain = useDevChain('31351');
useEmbeddedStore({ [FOLLOWED_CHAINS_VARIABLE]: encodeFollowedChains(CHAIN_IDS.map(publicFactsOf)) });

const DEV_ACCOUNT = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
/** What the node behind does not know yet: these block numbers, and how far its head is behind. */
const behind = { blocks: (_number: number) => false, headBehindBy: 0, headerNotFound: false };
let proxy: RpcProxy;
beforeAll(async () => {
  proxy = await startRpcProxy(chain.rpcUrl(), {
    answer: (call, fromNode) => {
      if (call.method === 'eth_blockNumber') return { ...fromNode, result: `0x${(Number(fromNode.result) - behind.headBehindBy).toString(16)}` };
      if (call.method === 'eth_getBlockByNumber' && behind.headerNotFound) return { jsonrpc: '2.0', id: call.id, error: { code: -32000, message: 'header not found' } };
      if (call.method === 'eth_getBlockByNumber' && behind.blocks(Number(call.params[0]))) return { ...fromNode, result: null };
      return fromNode;
    },
  });
});
afterAll(() => proxy.close());
afterEach(() => Object.assign(behind, { blocks: () => false, headBehindBy: 0, headerNotFound: false }));

function newChain() {
  const chainId = CHAIN_IDS.shift()!;
  const log = new Logger({ logLevel: 'SILENT' });
  const warnings = jest.spyOn(log, 'warn');
  const errors = jest.spyOn(log, 'error');
  const settings = { ...devChainSettings(chainId, proxy.url), firstCheckpoint: undefined };
  const logged = () => [...warnings.mock.calls, ...errors.mock.calls].map(([message]) => message as string);
  return { chainId, follower: new ChainFollower(settings, log, NO_QUEUE), logged };
}

const head = async () => Number(await chain.rpc('eth_blockNumber'));
const hashAt = async (number: number) => (await chain.rpc('eth_getBlockByNumber', [`0x${number.toString(16)}`, false])).hash as string;

async function stepUntilCaughtUp(follower: ChainFollower) {
  for (let steps = 0; !(await follower.step()).caughtUp; steps += 1) if (steps > 20) throw new Error('not caught up');
}

/** A webhook watching a new address on the chain, and its recorded notifications' transaction hashes. */
async function watched(chainId: string) {
  const address = randomAddress();
  const account = randomAccount();
  const webhook = await createWebhook(account, createWebhookBody.parse(webhookInput({ chainId, metadata: { addresses: [address] } })));
  const notified = async () =>
    (await recordedMessages(account, webhook.id, 100)).map((message) => JSON.parse(message.body).event.transaction.txHash as string);
  return { address, notified };
}

/** A chain followed up to its head with `blocks` blocks kept in its checkpoint, and a watched address on it. */
async function followedWithBlocksKept(blocks: number) {
  const followed = newChain();
  const watch = await watched(followed.chainId);
  await stepUntilCaughtUp(followed.follower);
  await chain.rpc('anvil_mine', [`0x${blocks.toString(16)}`]);
  await stepUntilCaughtUp(followed.follower);
  return { ...followed, ...watch, checkpoint: (await getCheckpoint(followed.chainId))! };
}

describe('a node behind answering null for a block', () => {
  test("at the follower's first step: nothing is stored, and the next step takes the first checkpoint", async () => {
    const { chainId, follower } = newChain();
    await chain.rpc('anvil_mine', ['0x3']);
    const first = await head();
    behind.blocks = (number) => number === first;
    await expect(follower.step()).rejects.toBeInstanceOf(LaggingNodeError);
    expect(await getItem({ TableName: tableName(), Key: chainCheckpointKey(chainId), ConsistentRead: true })).toBeUndefined();
    behind.blocks = () => false;
    await follower.step();
    expect(await getCheckpoint(chainId)).toMatchObject({ number: first, hash: await hashAt(first) });
  });

  test('a checkpoint stored without a hash (by a follower before this fix) is repaired: its block and those after it are taken, none skipped', async () => {
    const { chainId, follower, logged } = newChain();
    const { address, notified } = await watched(chainId);
    // The older follower took the block of this transaction as `null`, and stored that as its checkpoint.
    const missed = await chain.send({ from: DEV_ACCOUNT, to: address, value: 1n });
    const number = Number(missed.blockNumber);
    await putItem({ TableName: tableName(), Item: { ...chainCheckpointKey(chainId), number, recent: [[number - 1, await hashAt(number - 1)], [number]], updatedAt: Date.now() } });
    const later = await chain.send({ from: DEV_ACCOUNT, to: address, value: 2n });
    await chain.rpc('anvil_mine', ['0x3']);
    await stepUntilCaughtUp(follower);
    expect((await notified()).sort()).toEqual([missed.transactionHash, later.transactionHash].sort());
    expect((await getCheckpoint(chainId))!.hash).toBe(await hashAt(await head()));
    expect(logged()).toEqual(['checkpoint stored without a block hash repaired: going on after the last block taken whole']);
  });

  test("geth's `header not found` for a block is the node behind too: asked again", async () => {
    behind.headerNotFound = true;
    await expect(new ChainNode(proxy.url, 'auto').blockAt(1, { traces: true })).rejects.toBeInstanceOf(LaggingNodeError);
  });

  test('a checkpoint without a hash is never stored', async () => {
    const { chainId } = newChain();
    await expect(moveCheckpoint(chainId, undefined, { number: 1, hash: undefined as never, recent: [] })).rejects.toThrow(/without a block hash/);
    await expect(moveCheckpoint(chainId, undefined, { number: 1, hash: '0x01', recent: [{ number: 1, hash: undefined as never }] })).rejects.toThrow(/without a block hash/);
    expect(await getCheckpoint(chainId)).toBeUndefined();
  });

  test.each([
    ['while its head is at the checkpoint (a load-balanced node)', 0, 1],
    ['with its head 2 blocks behind the checkpoint', 2, 2],
  ])("for the checkpoint's block, %s: asked again, no reorganisation", async (_, headBehindBy, unknownBlocks) => {
    const { chainId, follower, logged, address, notified, checkpoint } = await followedWithBlocksKept(4);
    Object.assign(behind, { blocks: (number: number) => number > checkpoint.number - unknownBlocks, headBehindBy });
    await expect(follower.step()).rejects.toBeInstanceOf(LaggingNodeError);
    await expect(new ChainFollower(follower.chain, new Logger({ logLevel: 'SILENT' }), NO_QUEUE).step()).rejects.toBeInstanceOf(LaggingNodeError);
    expect(await getCheckpoint(chainId)).toEqual(checkpoint);
    Object.assign(behind, { blocks: () => false, headBehindBy: 0 });
    const receipt = await chain.send({ from: DEV_ACCOUNT, to: address, value: 1n });
    await stepUntilCaughtUp(follower);
    expect(await notified()).toEqual([receipt.transactionHash]);
    expect(logged().filter((message) => /reorganisation/.test(message))).toEqual([]);
  });

  test('under the checkpoint during a real reorganisation: it waits for them, then goes back to the common block, not past every block kept', async () => {
    const { chainId, follower, logged, address, notified, checkpoint: before } = await followedWithBlocksKept(5);
    await chain.rpc('anvil_reorg', [2, [[{ from: DEV_ACCOUNT, to: address, value: '0x7' }, 0]]]);
    // The two replaced blocks differ; the node does not know the ones under them for a while.
    behind.blocks = (number) => number < before.number - 1;
    await expect(follower.step()).rejects.toBeInstanceOf(LaggingNodeError);
    expect(await getCheckpoint(chainId)).toEqual(before);
    behind.blocks = () => false;
    await stepUntilCaughtUp(follower);
    const after = (await getCheckpoint(chainId))!;
    expect(after.recent.map((block) => block.number)).toEqual(expect.arrayContaining([before.number - 3, before.number - 2, before.number]));
    expect(after.hash).toBe(await hashAt(after.number));
    expect(await notified()).toHaveLength(1);
    expect(logged()).toEqual(['reorganisation: going back to the common block']);
  });
});
