import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { startDevChain, type DevChain } from '../../infra/local/dev-chain';
import { devChainFiles } from '../../infra/local/dev-chain-history';
import { ChainNode } from '../../lib/chains/rpc';
import { DEV_ACCOUNT, jsonRpc, seedDevChainHistory, sendTransaction, startPlainAnvil } from '../support/dev-chain';
import { childrenOf, waitUntilGone } from '../support/processes';
import { useTempDir } from '../support/temp-dir';

const dataDir = useTempDir('webhooks-dev-chain-history-');
const stateDirectory = () => path.join(dataDir(), 'dev-chain');
const snapshotFile = () => devChainFiles(stateDirectory()).snapshot;

const BLOCKS = 10_000;
/** What a SIGKILL may lose on this chain: the blocks of the last ~1.4 s (docs/chain-follower.md), with room for a busy machine. */
const LOSS_BOUND_MS = 2_000;

let transfers: { hash: string; blockNumber: number }[];
let chain: DevChain | undefined;

beforeAll(async () => {
  transfers = await seedDevChainHistory(stateDirectory(), BLOCKS, 50);
}, 30_000);

afterEach(async () => {
  await chain?.stop();
  chain = undefined;
});

async function startTimed(): Promise<{ chain: DevChain; ms: number }> {
  const started = Date.now();
  chain = await startDevChain({ port: 0, chainId: '31337', stateDirectory: stateDirectory() });
  return { chain, ms: Date.now() - started };
}

/**
 * Sends a transfer (a block each) every 50 ms for `forMs`, then SIGKILLs `victim` of the running
 * chain and waits for anvil to be gone. Returns when each block was mined, and when the kill was.
 */
async function sendThenKill(running: DevChain, victim: 'anvil' | 'keeper', forMs: number) {
  const [anvil] = childrenOf(running.pid);
  const minedAt = new Map<number, number>();
  const until = Date.now() + forMs;
  while (Date.now() < until) {
    const receipt = await sendTransaction(running.rpcUrl, { from: DEV_ACCOUNT, to: `0x${'88'.repeat(20)}`, value: 1n });
    minedAt.set(Number(receipt.blockNumber), Date.now());
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const killedAt = Date.now();
  process.kill(victim === 'anvil' ? anvil! : running.pid, 'SIGKILL');
  await waitUntilGone(anvil!);
  await running.unexpectedExit;
  chain = undefined;
  return { minedAt, killedAt };
}

/** How long before the kill the first block lost was mined (0 when none was). */
function lostSpanMs(minedAt: Map<number, number>, killedAt: number, headAfter: number): number {
  const firstLost = minedAt.get(headAfter + 1);
  return firstLost === undefined ? 0 : killedAt - firstLost;
}

it(`a dev chain of ${BLOCKS} blocks starts in a few seconds and serves its old blocks with their transactions and receipts`, async () => {
  const { chain: running, ms } = await startTimed();
  expect(ms).toBeLessThan(5_000);
  expect(Number(await jsonRpc(running.rpcUrl, 'eth_blockNumber'))).toBe(BLOCKS);
  for (const transfer of [transfers[0]!, transfers[100]!, transfers.at(-1)!]) {
    const block = await jsonRpc(running.rpcUrl, 'eth_getBlockByNumber', [`0x${transfer.blockNumber.toString(16)}`, true]);
    expect(block.transactions).toEqual([expect.objectContaining({ hash: transfer.hash, from: DEV_ACCOUNT })]);
    const receipt = await jsonRpc(running.rpcUrl, 'eth_getTransactionReceipt', [transfer.hash]);
    expect(receipt).toMatchObject({ status: '0x1', blockHash: block.hash, blockNumber: block.number });
  }
  // Blocks from before the start keep their traces for trace_block (anvil kept each transaction's);
  // the callTracer, which runs the block again, has no state for them: the follower takes them
  // whole, their internal transactions marked unknown (docs/chain-follower.md, "RPC faults").
  const number = transfers[100]!.blockNumber;
  const taken = await new ChainNode(running.rpcUrl, 'auto').blockAt(number, { traces: true });
  expect(taken.receipts).toHaveLength(1);
  expect(taken.traces).toEqual([expect.objectContaining({ type: 'CALL', from: DEV_ACCOUNT, to: expect.stringMatching(/^0x/) })]);
  expect((await new ChainNode(running.rpcUrl, 'debug_traceBlockByHash').blockAt(number, { traces: true })).traces).toEqual([null]);
}, 30_000);

it('a snapshot grows with the blocks mined since the last, and is not written while nothing changes', async () => {
  const { chain: running } = await startTimed();
  const before = statSync(snapshotFile());
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(statSync(snapshotFile()).mtimeMs).toBe(before.mtimeMs);
  await jsonRpc(running.rpcUrl, 'anvil_mine', ['0x1f4']);
  await running.stop();
  chain = undefined;
  const after = statSync(snapshotFile());
  expect(after.mtimeMs).toBeGreaterThan(before.mtimeMs);
  // A block takes some hundred bytes gzipped; a state for each block took a megabyte.
  expect((after.size - before.size) / 500).toBeLessThan(400);
  expect(after.size / (BLOCKS + 500)).toBeLessThan(400);
}, 30_000);

it.each([
  ['anvil', 'anvil'],
  ['its keeper', 'keeper'],
] as const)('after a SIGKILL of %s, the chain comes back without at most the blocks of the last ~1.4 s', async (_, victim) => {
  const { chain: running } = await startTimed();
  const headBefore = Number(await jsonRpc(running.rpcUrl, 'eth_blockNumber'));
  const { minedAt, killedAt } = await sendThenKill(running, victim, 4_000);
  const { chain: restarted, ms } = await startTimed();
  expect(ms).toBeLessThan(5_000);
  const headAfter = Number(await jsonRpc(restarted.rpcUrl, 'eth_blockNumber'));
  expect(headAfter).toBeGreaterThan(headBefore);
  expect(lostSpanMs(minedAt, killedAt, headAfter)).toBeLessThanOrEqual(LOSS_BOUND_MS);
  const kept = await jsonRpc(restarted.rpcUrl, 'eth_getBlockByNumber', [`0x${headAfter.toString(16)}`, true]);
  expect(await jsonRpc(restarted.rpcUrl, 'eth_getTransactionReceipt', [kept.transactions[0].hash])).toMatchObject({ status: '0x1' });
}, 30_000);

it("a state directory of anvil's own dumps (state.json, with a state per block) comes back as its chain, the states left out", async () => {
  const earlier = path.join(dataDir(), 'earlier-dev-chain');
  mkdirSync(earlier);
  const anvil = await startPlainAnvil(['--state', path.join(earlier, 'state.json'), '--preserve-historical-states']);
  const receipt = await sendTransaction(anvil.rpcUrl, { from: DEV_ACCOUNT, to: `0x${'99'.repeat(20)}`, value: 1n });
  await jsonRpc(anvil.rpcUrl, 'anvil_mine', ['0x3']);
  await anvil.stop('SIGTERM');
  const said = jest.spyOn(console, 'error').mockImplementation(() => undefined);
  chain = await startDevChain({ port: 0, chainId: '31337', stateDirectory: earlier });
  expect(said).toHaveBeenCalledWith(expect.stringContaining("the dev chain's earlier state file became"));
  said.mockRestore();
  expect(Number(await jsonRpc(chain.rpcUrl, 'eth_blockNumber'))).toBe(4);
  expect(await jsonRpc(chain.rpcUrl, 'eth_getTransactionReceipt', [receipt.transactionHash])).toMatchObject({ status: '0x1', blockNumber: '0x1' });
  expect(existsSync(path.join(earlier, 'state.json'))).toBe(false);
  expect(existsSync(devChainFiles(earlier).snapshot)).toBe(true);
}, 30_000);
