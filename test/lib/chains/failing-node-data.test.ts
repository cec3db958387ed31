import { Logger } from '@aws-lambda-powertools/logger';
import { ChainFollower, UNREADABLE_AFTER_ATTEMPTS } from '../../../lib/chains/follower';
import { quarantinedBlocks, retakeQuarantinedBlock } from '../../../lib/chains/quarantine';
import { devChainSettings, encodeFollowedChains, FOLLOWED_CHAINS_VARIABLE, publicFactsOf } from '../../../lib/config/chains';
import { createWebhookBody } from '../../../lib/schemas/webhook';
import { recordedMessages } from '../../support/recorded-messages';
import { createWebhook } from '../../../lib/webhooks/webhooks';
import { useDevChain } from '../../support/dev-chain';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../../support/factories';
import { startRpcProxy, type RpcProxy, type RpcResponse } from '../../support/rpc-proxy';
import { stepsUntilCaughtUp } from '../../support/follower-steps';
import { NO_QUEUE } from '../../../lib/deliveries/queue';

// One anvil behind a proxy that fails what a real node may fail on for good; each test follows it under a chain id of its own.
const CHAIN_IDS = ['31383', '31384', '31385', '31386'];
const chain = useDevChain('31382');
useEmbeddedStore({ [FOLLOWED_CHAINS_VARIABLE]: encodeFollowedChains(CHAIN_IDS.map(publicFactsOf)) });

const DEV_ACCOUNT = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const faults = { tracesFailFor: new Set<string>(), receiptsFailFor: new Set<string>(), receiptsBehindFor: new Set<string>() };
let proxy: RpcProxy;
beforeAll(async () => {
  proxy = await startRpcProxy(chain.rpcUrl(), {
    answer: (call, fromNode): RpcResponse => {
      const hash = String(call.params?.[0]);
      if (call.method === 'debug_traceBlockByHash' && Array.isArray(fromNode.result)) {
        // geth's answer for a transaction whose tracer failed: its hash and the error, no result.
        const traces = fromNode.result as { txHash?: string; result?: unknown }[];
        const transactions = faults.tracesFailFor.has(hash) ? traces.map((trace) => ({ txHash: trace.txHash, error: 'execution timeout' })) : traces;
        return { ...fromNode, result: transactions };
      }
      // Traced alone, it fails the same way.
      if (call.method === 'debug_traceTransaction' && faults.tracesFailFor.has(hash)) return { jsonrpc: '2.0', id: call.id, error: { code: -32000, message: 'execution timeout' } };
      if (call.method === 'eth_getBlockReceipts' && faults.receiptsFailFor.has(hash)) return { jsonrpc: '2.0', id: call.id, error: { code: -32000, message: 'internal error' } };
      // A node behind: it knows the block, not yet its receipts.
      if (call.method === 'eth_getBlockReceipts' && faults.receiptsBehindFor.has(hash)) return { jsonrpc: '2.0', id: call.id, result: null };
      return fromNode;
    },
  });
});
afterAll(() => proxy.close());
afterEach(() => Object.assign(faults, { tracesFailFor: new Set(), receiptsFailFor: new Set(), receiptsBehindFor: new Set() }));

const silent = new Logger({ logLevel: 'SILENT' });

async function followed() {
  // Traced as geth traces: its answer for a transaction it could not trace is the one faked here.
  const settings = { ...devChainSettings(CHAIN_IDS.shift()!, proxy.url), firstCheckpoint: undefined, traces: 'debug_traceBlockByHash' as const };
  const follower = new ChainFollower(settings, silent, NO_QUEUE);
  await stepsUntilCaughtUp(follower, 30);
  return { settings, follower };
}

async function watched(chainId: string, address: string, includeInternalTxs: boolean) {
  const account = randomAccount();
  const webhook = await createWebhook(account, createWebhookBody.parse(webhookInput({ chainId, metadata: { addresses: [address] }, includeInternalTxs })));
  return async () => (await recordedMessages(account, webhook.id, 10)).map((message) => JSON.parse(message.body).event);
}

/** A block mined with the next transaction, whose hash the proxy can fail on before the follower fetches it. */
async function nextBlock(to: string, value: bigint) {
  await chain.rpc('evm_setAutomine', [false]);
  try {
    const hash = (await chain.rpc('eth_sendTransaction', [{ from: DEV_ACCOUNT, to, value: `0x${value.toString(16)}` }])) as string;
    await chain.rpc('anvil_mine', ['0x1']);
    const receipt = await chain.rpc('eth_getTransactionReceipt', [hash]);
    return { transactionHash: hash, blockHash: receipt.blockHash as string, blockNumber: Number(receipt.blockNumber) };
  } finally {
    await chain.rpc('evm_setAutomine', [true]);
  }
}

describe('a transaction the node cannot trace', () => {
  test('is notified without its internal transactions, marked omitted, to webhooks that include them; the others as usual', async () => {
    const { settings, follower } = await followed();
    const address = randomAddress();
    const [withInternal, without] = [await watched(settings.chainId, address, true), await watched(settings.chainId, address, false)];
    const untraced = await nextBlock(address, 1n);
    faults.tracesFailFor.add(untraced.blockHash).add(untraced.transactionHash);
    expect(await stepsUntilCaughtUp(follower, 30)).toEqual([]);
    const [event] = await withInternal();
    expect(event.transaction).toMatchObject({ txHash: untraced.transactionHash, internalTransactions: [] });
    expect(event.omitted).toEqual({ internalTransactions: 1 });
    const [plain] = await without();
    expect(plain.transaction.txHash).toBe(untraced.transactionHash);
    expect(plain.omitted).toBeUndefined();
  });
});

describe('a block whose receipts the node fails on every time, while it answers otherwise', () => {
  test(`is quarantined after ${UNREADABLE_AFTER_ATTEMPTS} failed fetches in a row, the chain goes on, and it is retaken once the node serves it`, async () => {
    const { settings, follower } = await followed();
    const [address, later] = [randomAddress(), randomAddress()];
    const [notified, notifiedLater] = [await watched(settings.chainId, address, false), await watched(settings.chainId, later, false)];
    const unreadable = await nextBlock(address, 1n);
    faults.receiptsFailFor.add(unreadable.blockHash);
    const after = await chain.send({ from: DEV_ACCOUNT, to: later, value: 2n });
    const failures = await stepsUntilCaughtUp(follower, 30);
    expect(failures).toHaveLength(UNREADABLE_AFTER_ATTEMPTS - 1);
    expect(await quarantinedBlocks(settings)).toEqual([
      {
        number: unreadable.blockNumber,
        hash: unreadable.blockHash,
        reason: expect.stringMatching(/^InvalidInputRpcError: /),
        attempts: UNREADABLE_AFTER_ATTEMPTS,
        quarantinedAt: expect.any(Number),
      },
    ]);
    expect((await notifiedLater()).map((event) => event.transaction.txHash)).toEqual([after.transactionHash]);
    expect(await notified()).toEqual([]);

    faults.receiptsFailFor.clear();
    await retakeQuarantinedBlock(settings, unreadable.blockNumber, silent, NO_QUEUE);
    expect((await notified()).map((event) => event.transaction.txHash)).toEqual([unreadable.transactionHash]);
    expect(await quarantinedBlocks(settings)).toEqual([]);
  });
});

describe('a block whose receipts a node behind does not have, however many times it is asked', () => {
  test('is never quarantined: the follower waits at the block, then takes it once the node has them', async () => {
    const { settings, follower } = await followed();
    const address = randomAddress();
    const notified = await watched(settings.chainId, address, false);
    const behind = await nextBlock(address, 1n);
    faults.receiptsBehindFor.add(behind.blockHash);
    for (let step = 0; step < UNREADABLE_AFTER_ATTEMPTS * 2; step += 1) {
      await expect(follower.step()).rejects.toThrow(/receipts/);
    }
    expect(await quarantinedBlocks(settings)).toEqual([]);
    expect(await notified()).toEqual([]);

    faults.receiptsBehindFor.clear();
    await stepsUntilCaughtUp(follower, 30);
    expect((await notified()).map((event) => event.transaction.txHash)).toEqual([behind.transactionHash]);
  });
});

describe('a block fetched untraced while the index of webhooks that want traces did not show one yet (eventually consistent on AWS)', () => {
  test('is fetched again with its traces for a webhook it notifies that asks for internal transactions', async () => {
    const settings = { ...devChainSettings(CHAIN_IDS.shift()!, proxy.url), firstCheckpoint: undefined };
    // The index answers "none" for the whole test.
    const follower = new ChainFollower(settings, silent, NO_QUEUE, undefined, async () => false);
    await stepsUntilCaughtUp(follower, 30);
    const address = randomAddress();
    const notified = await watched(settings.chainId, address, true);
    const sent = await nextBlock(address, 1n);
    expect(await stepsUntilCaughtUp(follower, 30)).toEqual([]);
    const [event] = await notified();
    expect(event.transaction.txHash).toBe(sent.transactionHash);
    expect(event.transaction.internalTransactions).toEqual([expect.objectContaining({ internalTxType: 'CALL', value: '1' })]);
    expect(event.omitted).toBeUndefined();
  });
});
