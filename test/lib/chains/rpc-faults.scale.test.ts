import { Logger } from '@aws-lambda-powertools/logger';
import { encodeFunctionData, type Hex } from 'viem';
import { DevToken } from '../../../infra/dev-contracts.generated';
import { ChainFollower } from '../../../lib/chains/follower';
import { devChainSettings, encodeFollowedChains, FOLLOWED_CHAINS_VARIABLE, publicFactsOf, type ChainSettings } from '../../../lib/config/chains';
import { createWebhookBody } from '../../../lib/schemas/webhook';
import { getCheckpoint, listQuarantinedBlocks } from '../../../lib/store/chains';
import { recordedMessages } from '../../support/recorded-messages';
import { createWebhook } from '../../../lib/webhooks/webhooks';
import { useDevChain } from '../../support/dev-chain';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../../support/factories';
import { startRpcProxy, type RpcCall, type RpcProxy, type RpcResponse } from '../../support/rpc-proxy';
import { NO_QUEUE } from '../../../lib/deliveries/queue';

const CHAIN_ID = '31352';
const CONFIRMATIONS = 2;
const SEED = Number(process.env.RPC_FAULTS_SEED ?? 20261125);
const ROUNDS = 100;
const chain = useDevChain(CHAIN_ID);
useEmbeddedStore({ [FOLLOWED_CHAINS_VARIABLE]: encodeFollowedChains([publicFactsOf(CHAIN_ID)]) });

/** mulberry32: the same seed draws the same faults and the same chain history. */
function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, below: (n: number) => Math.floor(next() * n), chance: (p: number) => next() < p };
}

const DEV_ACCOUNT = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const ADDRESSES = Array.from({ length: 6 }, randomAddress);
/** Two accounts' webhooks; they share ADDRESSES[2]; ADDRESSES[5] is watched by nobody. */
const WATCHES = [ADDRESSES.slice(0, 3), ADDRESSES.slice(2, 5)];
const quantity = (value: number) => `0x${value.toString(16)}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const BLOCK_METHODS = ['eth_getBlockByNumber', 'eth_getBlockReceipts', 'eth_getTransactionReceipt', 'debug_traceBlockByHash', 'eth_call'];
const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

/**
 * The faults of a provider's RPC, drawn from the seed: a load balancer's 5xx, latency, geth's
 * `header not found`, a node 2–3 blocks behind (its head, and null for the blocks, receipts and
 * traces it has not seen yet), and a follower killed at any request (its requests fail from then on).
 */
function faultyNode(seed: number) {
  const draw = prng(seed);
  const counts: Record<string, number> = {};
  const count = (fault: string) => (counts[fault] = (counts[fault] ?? 0) + 1);
  const killed = new Set<string>();
  const numberOfBlock = new Map<string, number>();
  const state = { on: true, head: 0 };
  return {
    counts,
    state,
    killed,
    onRequest: async (path: string) => {
      if (killed.has(path)) return 'destroy' as const;
      if (!state.on) return 'forward' as const;
      if (draw.chance(0.02)) {
        killed.add(path);
        count('follower killed');
        return 'destroy' as const;
      }
      if (draw.chance(0.05)) {
        count('HTTP 5xx');
        return [500, 502, 503][draw.below(3)]!;
      }
      if (draw.chance(0.2)) {
        count('latency');
        await sleep(5 + draw.below(60));
      }
      return 'forward' as const;
    },
    answer: (call: RpcCall, fromNode: RpcResponse): RpcResponse => {
      const result = fromNode.result as any;
      if (call.method === 'eth_getBlockByNumber' && result) numberOfBlock.set(result.hash, Number(result.number));
      if (!state.on) return fromNode;
      if (BLOCK_METHODS.includes(call.method) && draw.chance(0.04)) {
        count('header not found');
        return { jsonrpc: '2.0', id: call.id, error: { code: -32000, message: 'header not found' } };
      }
      if (!draw.chance(0.15)) return fromNode;
      const known = state.head - 2 - draw.below(2);
      if (call.method === 'eth_blockNumber') {
        count('head behind');
        return { ...fromNode, result: quantity(Math.min(Number(result), known)) };
      }
      const number =
        call.method === 'eth_getBlockByNumber' ? Number(call.params[0])
        : call.method === 'eth_getBlockReceipts' || call.method === 'debug_traceBlockByHash' ? numberOfBlock.get(call.params[0] as string)
        : call.method === 'eth_getTransactionReceipt' && result ? Number(result.blockNumber)
        : -1;
      if (number === -1 || (number !== undefined && number <= known)) return fromNode;
      count(`null for ${call.method}`);
      return { ...fromNode, result: null };
    },
  };
}

let proxy: RpcProxy;
const node = faultyNode(SEED);
beforeAll(async () => {
  proxy = await startRpcProxy(chain.rpcUrl(), { onRequest: node.onRequest, answer: node.answer });
});
afterAll(() => proxy.close());

const head = async () => Number(await chain.rpc('eth_blockNumber'));
const blockAt = async (number: number) => chain.rpc('eth_getBlockByNumber', [quantity(number), true]);

test(`behind a faulty RPC (seed ${SEED}), with reorganisations and followers killed, every canonical transfer is notified once and the chain goes on`, async () => {
  const scenario = prng(SEED ^ 0x5eed);
  const log = new Logger({ logLevel: 'SILENT' });
  const warnings = jest.spyOn(log, 'warn');
  const errors = jest.spyOn(log, 'error');
  const webhooks = await Promise.all(
    WATCHES.map(async (addresses) => {
      const account = randomAccount();
      return { account, addresses, webhook: await createWebhook(account, createWebhookBody.parse(webhookInput({ chainId: CHAIN_ID, metadata: { addresses } }))) };
    }),
  );
  const settings: ChainSettings = { ...devChainSettings(CHAIN_ID, proxy.url), confirmations: CONFIRMATIONS, firstCheckpoint: undefined };
  let generation = 0;
  const newFollower = () => new ChainFollower({ ...settings, rpcUrl: `${proxy.url}/follower-${++generation}` }, log, NO_QUEUE);
  let follower = newFollower();
  const stepErrors: Record<string, number> = {};
  let lastError: unknown;
  const walkBacks = () => [...warnings.mock.calls, ...errors.mock.calls].filter(([message]) => /reorganisation/.test(message as string)).length;
  /** Reorganisations deeper than the confirmations since the follower last walked back; walking back with none is a false fork. */
  let forksToWalkBack = 0;
  let falseWalkBacks = 0;
  async function step() {
    node.state.head = await head();
    const walkedBackBefore = walkBacks();
    try {
      await follower.step();
      if (walkBacks() > walkedBackBefore) [falseWalkBacks, forksToWalkBack] = [falseWalkBacks + (forksToWalkBack === 0 ? 1 : 0), 0];
    } catch (error) {
      lastError = error;
      const name = (error as Error).name;
      stepErrors[name] = (stepErrors[name] ?? 0) + 1;
    }
    // As a SIGKILL leaves it: a new follower on the same store, from whatever the killed one wrote.
    if (node.killed.has(`/follower-${generation}`)) follower = newFollower();
  }

  /** Blocks dropped by a reorganisation, with how deep each was when it was dropped. */
  const dropped: { number: number; hash: string; depth: number }[] = [];
  async function dropAbove(number: number) {
    const top = await head();
    for (let at = number + 1; at <= top; at += 1) dropped.push({ number: at, hash: (await blockAt(at)).hash, depth: top - at });
  }
  const send = (to: string, value: number) => chain.send({ from: DEV_ACCOUNT, to, value: BigInt(value) });
  // Its name, symbol and decimals are read by `eth_call`s behind the faults too.
  const token = (await chain.send({ from: DEV_ACCOUNT, data: DevToken.bytecode })).contractAddress as string;
  const sendToken = (to: string, value: number) =>
    chain.send({ from: DEV_ACCOUNT, to: token, data: encodeFunctionData({ abi: DevToken.abi, functionName: 'transfer', args: [to as Hex, BigInt(value)] }) });
  const reorganisations = { shallow: 0, deep: 0, reverted: 0 };

  await chain.rpc('anvil_mine', ['0xa']);
  while (!(await getCheckpoint(CHAIN_ID))) await step();
  const first = (await getCheckpoint(CHAIN_ID))!.number;
  /** A snapshot to revert to: a chain that comes back shorter, as after a crash. anvil forgets it once a reorganisation replaces its block. */
  let snapshot: { id: string; head: number } | undefined;
  async function reorganise(depth: number, value: number) {
    const forkedAt = (await head()) - depth;
    await dropAbove(forkedAt);
    await chain.rpc('anvil_reorg', [depth, [[{ from: DEV_ACCOUNT, to: ADDRESSES[scenario.below(ADDRESSES.length)], value: quantity(value) }, 0]]]);
    if (snapshot && forkedAt < snapshot.head) snapshot = undefined;
  }
  for (let round = 0; round < ROUNDS; round += 1) {
    const action = scenario.next();
    if (action < 0.35) {
      for (let count = 1 + scenario.below(3); count > 0; count -= 1) await send(ADDRESSES[scenario.below(ADDRESSES.length)]!, round + 1);
    } else if (action < 0.45) {
      await sendToken(ADDRESSES[scenario.below(ADDRESSES.length)]!, round + 1);
    } else if (action < 0.55) {
      await chain.rpc('anvil_mine', [quantity(1 + scenario.below(2))]);
    } else if (action < 0.75) {
      // Shallower than the confirmations: the dropped blocks were never deep enough to be notified.
      await reorganise(1 + scenario.below(CONFIRMATIONS), 1000 + round);
      reorganisations.shallow += 1;
    } else if (action < 0.85 && (await head()) - first > 2 * CONFIRMATIONS + 4) {
      // Deeper than the confirmations: some dropped blocks were notified, the follower walks back.
      await reorganise(CONFIRMATIONS + 1 + scenario.below(4), 2000 + round);
      reorganisations.deep += 1;
      forksToWalkBack += 1;
    } else if (action < 0.95 && snapshot && (await head()) - snapshot.head > CONFIRMATIONS + 1) {
      await dropAbove(snapshot.head);
      await chain.rpc('evm_revert', [snapshot.id]);
      snapshot = undefined;
      await send(ADDRESSES[scenario.below(ADDRESSES.length)]!, 3000 + round);
      reorganisations.reverted += 1;
      forksToWalkBack += 1;
    }
    if (!snapshot && scenario.chance(0.3)) snapshot = { id: await chain.rpc<string>('evm_snapshot'), head: await head() };
    for (let steps = 1 + scenario.below(3); steps > 0; steps -= 1) await step();
  }

  node.state.on = false;
  // A chain reverted below the checkpoint looks like a node behind until a block of its new branch is
  // `confirmations` deep: the chain goes on meanwhile, as a real one does.
  await chain.rpc('anvil_mine', [quantity(CONFIRMATIONS + 1)]);
  const mined = await head();
  for (let steps = 0; (await getCheckpoint(CHAIN_ID))?.number !== mined - CONFIRMATIONS; steps += 1) {
    if (steps > 100) throw new Error(`seed ${SEED}: the follower did not catch up once the faults stopped: ${String(lastError)}`);
    await step();
  }

  /** Each canonical block's hash, and the addresses each of its transactions sends to (coins or tokens). */
  const canonical = new Map<number, { hash: string; transactions: { hash: string; to: string[] }[] }>();
  for (let number = first + 1; number <= mined - CONFIRMATIONS; number += 1) {
    const block = await blockAt(number);
    const receipts: { logs: { topics: string[] }[] }[] = await chain.rpc('eth_getBlockReceipts', [block.hash]);
    const transactions = block.transactions.map((transaction: { hash: string; to: string | null }, index: number) => ({
      hash: transaction.hash,
      to: [transaction.to, ...receipts[index]!.logs.filter((log) => log.topics[0] === TRANSFER_TOPIC).map((log) => `0x${log.topics[2]!.slice(26)}`)],
    }));
    canonical.set(number, { hash: block.hash, transactions });
  }
  const walkedBack = [...warnings.mock.calls, ...errors.mock.calls].map(([message]) => message as string).filter((message) => /reorganisation/.test(message));
  const report = JSON.stringify({ seed: SEED, faults: node.counts, stepErrors, reorganisations, walkedBack: walkedBack.length, falseWalkBacks, followers: generation, blocks: mined - first });
  process.stdout.write(`rpc faults run: ${report}\n`);
  for (const { account, addresses, webhook } of webhooks) {
    const messages = await recordedMessages(account, webhook.id, 10_000);
    const notified = messages.map((message) => JSON.parse(message.body).event.transaction as { txHash: string; blockHash: string; blockNumber: string });
    const expected = [...canonical.values()].flatMap((block) =>
      block.transactions.filter((transaction) => transaction.to.some((to) => addresses.includes(to))).map((transaction) => `${transaction.hash}@${block.hash}`),
    );
    const canonicalNotified = notified.filter((transaction) => canonical.get(Number(transaction.blockNumber))?.hash === transaction.blockHash);
    expect({ report, notified: canonicalNotified.map((transaction) => `${transaction.txHash}@${transaction.blockHash}`).sort() }).toEqual({ report, notified: expected.sort() });
    const neverDeepEnough = new Set(dropped.filter((block) => block.depth < CONFIRMATIONS).map((block) => block.hash));
    expect({ report, notified: notified.filter((transaction) => neverDeepEnough.has(transaction.blockHash)) }).toEqual({ report, notified: [] });
  }
  expect({ report, quarantined: await listQuarantinedBlocks(CHAIN_ID) }).toEqual({ report, quarantined: [] });
  expect(walkedBack.filter((message) => /deeper/.test(message))).toEqual([]);
  expect({ report, falseWalkBacks }).toEqual({ report, falseWalkBacks: 0 });
  expect(Object.keys(node.counts).sort()).toEqual(expect.arrayContaining(['HTTP 5xx', 'follower killed', 'head behind', 'header not found', 'latency', 'null for eth_getBlockByNumber']));
  expect(Object.values(reorganisations).every((count) => count > 0)).toBe(true);
}, 120_000);
