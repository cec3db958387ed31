import { inspect } from 'node:util';
import { encodeFunctionData, type Hex } from 'viem';
import { DevToken, Forwarder } from '../../infra/dev-contracts.generated';
import type { ChainFollower, StepResult } from '../../lib/chains/follower';
import type { QueuedDelivery, QueueSender } from '../../lib/deliveries/queue';
import { forEachChunk } from '../../lib/store/batch';
import { getMessage, queryMessages, type Message } from '../../lib/store/messages';
import { jsonRpc, sendTransaction } from './dev-chain';
import { randomAddress } from './factories';

/**
 * A block as full as a busy chain's (issue 43): a thousand transactions of three kinds, mined at
 * once on an anvil, for the follower's tests (test/lib/chains/full-block.scale.test.ts) and npm start's
 * (test/process/full-block-after-kill.test.ts).
 */

/** What a transaction of the block does: a plain transfer, an ERC-20 transfer, or a call whose internal call sends value on. */
export type TransferKind = 'native' | 'erc20' | 'forward';

/** One transaction of the block: its kind and the address that receives what it sends (the recipient of the token or internal transfer). */
export interface PlannedTransfer {
  kind: TransferKind;
  to: string;
}

export interface MinedTransfer extends PlannedTransfer {
  hash: string;
  from: string;
  /** The contract called (the token, the forwarder); none for a native transfer. */
  contract?: string;
  /** Wei for a native or forwarded transfer, token units for an ERC-20 one. */
  value: bigint;
}

export interface FullBlock {
  number: number;
  hash: string;
  /** Every transaction of the block, in block order. */
  transfers: MinedTransfer[];
}

/** Senders the block's transactions are spread over: anvil bounds what one sender may have pending, and a real block has many. */
export const SENDERS = 100;
/** Gas each kind is sent with (no estimate per transaction: the block's thousand would cost seconds of anvil's time). */
const GAS: Record<TransferKind, bigint> = { native: 21_000n, erc20: 90_000n, forward: 100_000n };
/** Calls per JSON-RPC batch: what a client of a real node would send at once. */
const BATCH = 100;
const TOKENS_PER_SENDER = 1_000_000_000_000_000_000_000n;

const quantity = (value: number | bigint) => `0x${value.toString(16)}`;

let batchId = 0;

/** A JSON-RPC batch; throws, naming the first failed call, when any call failed. */
export async function rpcBatch<T = any>(rpcUrl: string, calls: { method: string; params: unknown[] }[]): Promise<T[]> {
  if (calls.length === 0) return [];
  const first = ++batchId * 10_000;
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map(({ method, params }, index) => ({ jsonrpc: '2.0', id: first + index, method, params }))),
  });
  const answers = (await response.json()) as { id: number; result?: T; error?: { message: string } }[];
  if (!Array.isArray(answers)) throw new Error(`a batch of ${calls.length} calls (${calls[0]!.method}, ...) was answered ${inspect(answers)}`);
  const byId = new Map(answers.map((answer) => [answer.id, answer]));
  return calls.map(({ method, params }, index) => {
    const answer = byId.get(first + index);
    if (!answer || answer.error) throw new Error(`${method}(${JSON.stringify(params).slice(0, 200)}) in a batch of ${calls.length}: ${answer?.error?.message ?? 'no answer'}`);
    return answer.result as T;
  });
}

/** Who sends the block's transactions, and the contracts its token and internal transfers go through. */
export interface FullBlockSetup {
  senders: string[];
  token?: string;
  forwarder?: string;
}

/**
 * Funds SENDERS new addresses that anvil signs for (anvil_setBalance, anvil_impersonateAccount) and,
 * as asked, deploys the dev token (every sender given tokens) and a forwarder: in blocks of their own,
 * before the full block.
 */
export async function prepareFullBlock(rpcUrl: string, { token = false, forwarder = false } = {}): Promise<FullBlockSetup> {
  const senders = Array.from({ length: SENDERS }, randomAddress);
  const deployer = randomAddress();
  await rpcBatch(
    rpcUrl,
    [...senders, deployer].flatMap((address) => [
      { method: 'anvil_setBalance', params: [address, quantity(10n ** 24n)] },
      { method: 'anvil_impersonateAccount', params: [address] },
    ]),
  );
  const setup: FullBlockSetup = { senders };
  if (forwarder) setup.forwarder = (await sendTransaction(rpcUrl, { from: deployer, data: Forwarder.bytecode })).contractAddress as string;
  if (token) {
    const address = (await sendTransaction(rpcUrl, { from: deployer, data: DevToken.bytecode })).contractAddress as string;
    setup.token = address;
    // One block of a transfer to each sender.
    await minedTogether(rpcUrl, senders.map((sender) => ({ from: deployer, to: address, gas: GAS.erc20, data: tokenTransfer(sender, TOKENS_PER_SENDER) })));
  }
  return setup;
}

/**
 * Mines one block holding exactly the planned transfers, each from one of the setup's senders in
 * turn, and returns it; fails, saying what it holds, when the block holds anything else.
 */
export async function mineFullBlock(rpcUrl: string, setup: FullBlockSetup, planned: PlannedTransfer[]): Promise<FullBlock> {
  const transfers = planned.map((transfer, index): Omit<MinedTransfer, 'hash'> => {
    const from = setup.senders[index % setup.senders.length]!;
    const value = BigInt(index + 1);
    if (transfer.kind === 'native') return { ...transfer, from, value };
    const contract = transfer.kind === 'erc20' ? setup.token : setup.forwarder;
    if (!contract) throw new Error(`a ${transfer.kind} transfer planned, but prepareFullBlock was not asked for its contract`);
    return { ...transfer, from, contract, value };
  });
  const sent = transfers.map(({ kind, from, to, contract, value }) => {
    if (kind === 'native') return { from, to, value, gas: GAS.native };
    if (kind === 'erc20') return { from, to: contract!, gas: GAS.erc20, data: tokenTransfer(to, value) };
    return { from, to: contract!, gas: GAS.forward, value, data: encodeFunctionData({ abi: Forwarder.abi, functionName: 'forward', args: [to as Hex] }) };
  });
  const { block, hashes } = await minedTogether(rpcUrl, sent);
  const byHash = new Map(hashes.map((hash, index) => [hash, { ...transfers[index]!, hash }]));
  return { number: Number(block.number), hash: block.hash, transfers: (block.transactions as string[]).map((hash) => byHash.get(hash)!) };
}

const tokenTransfer = (to: string, value: bigint) => encodeFunctionData({ abi: DevToken.abi, functionName: 'transfer', args: [to as Hex, value] });

interface SentTransaction {
  from: string;
  to: string;
  gas: bigint;
  value?: bigint;
  data?: string;
}

/** Sends the transactions in JSON-RPC batches with automining off, then mines them as one block, and checks that it holds every one and nothing else, all successful. */
async function minedTogether(rpcUrl: string, transactions: SentTransaction[]) {
  const gasNeeded = transactions.reduce((sum, { gas }) => sum + gas, 0n);
  const { gasLimit } = await jsonRpc<{ gasLimit: string }>(rpcUrl, 'eth_getBlockByNumber', ['latest', false]);
  if (BigInt(gasLimit) < gasNeeded * 2n) await jsonRpc(rpcUrl, 'anvil_setBlockGasLimit', [quantity(gasNeeded * 2n)]);
  await jsonRpc(rpcUrl, 'evm_setAutomine', [false]);
  const hashes: string[] = [];
  let mined: string | undefined;
  try {
    for (let start = 0; start < transactions.length; start += BATCH) {
      const calls = transactions.slice(start, start + BATCH).map(({ from, to, gas, value, data }) => ({
        method: 'eth_sendTransaction',
        params: [{ from, to, gas: quantity(gas), ...(value === undefined ? {} : { value: quantity(value) }), ...(data ? { data } : {}) }],
      }));
      hashes.push(...(await rpcBatch<string>(rpcUrl, calls)));
    }
    mined = await jsonRpc<string>(rpcUrl, 'evm_mine', []);
  } finally {
    await jsonRpc(rpcUrl, 'evm_setAutomine', [true]);
  }
  const block = await jsonRpc<{ number: string; hash: string; transactions: string[] }>(rpcUrl, 'eth_getBlockByNumber', ['latest', false]);
  const missing = hashes.filter((hash) => !block.transactions.includes(hash));
  if (missing.length > 0 || block.transactions.length !== hashes.length) {
    throw new Error(`block ${Number(block.number)} (evm_mine answered ${mined}) holds ${block.transactions.length} transactions of the ${hashes.length} sent; ${missing.length} sent are not in it, e.g. ${missing.slice(0, 3).join(', ')}`);
  }
  const receipts = await jsonRpc<{ status: string; transactionHash: string }[]>(rpcUrl, 'eth_getBlockReceipts', [block.hash]);
  const failed = receipts.filter((receipt) => receipt.status !== '0x1');
  if (failed.length > 0) throw new Error(`${failed.length} of block ${Number(block.number)}'s ${receipts.length} transactions reverted, e.g. ${failed[0]!.transactionHash}`);
  return { block, hashes };
}

/** A queue that keeps what it is sent: what a follower queued, each send's deliveries in order. */
export function recordingQueue(): QueueSender & { sent: QueuedDelivery[] } {
  const sent: QueuedDelivery[] = [];
  return {
    sent,
    send: async (deliveries) => {
      sent.push(...deliveries);
    },
  };
}

/** Every message of the webhook, with its body, read a page at a time (the store functions the API uses). */
export async function allRecordedMessages(account: string, webhookId: string): Promise<Message[]> {
  const states = [];
  for (let afterId: string | undefined; ; ) {
    const { messages } = await queryMessages({ account, webhookId, limit: 100, afterId });
    states.push(...messages);
    if (messages.length < 100) break;
    afterId = messages.at(-1)!.messageId;
  }
  const read: Message[] = [];
  await forEachChunk(states, 1, 16, async ([state]) => {
    read.push((await getMessage(state!))!);
  });
  return read;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Steps the follower until its checkpoint is at `block` or past it, and returns the steps' results
 * and the errors of those that failed. Fails after `timeoutMs` (a step still under way then is left
 * to end on its own), or as soon as `stop` names a reason, saying where the follower stopped and why.
 */
export async function stepUntilPast(
  follower: ChainFollower,
  block: number,
  { timeoutMs, stop }: { timeoutMs: number; stop?: () => string | undefined },
): Promise<{ steps: StepResult[]; failures: unknown[] }> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  const steps: StepResult[] = [];
  const failures: unknown[] = [];
  const where = () =>
    `${steps.length} steps done, the checkpoint at ${steps.at(-1)?.checkpoint ?? 'none yet'}, ${failures.length} failed` +
    (failures.length > 0 ? ` (the last: ${describe(failures.at(-1))})` : '');
  for (;;) {
    const stepStarted = Date.now();
    const step = follower.step();
    step.catch(() => undefined);
    let stopped: string | undefined;
    const outcome = await new Promise<{ result?: StepResult; error?: unknown; late?: true }>((resolve) => {
      const timer = setTimeout(() => resolve({ late: true }), Math.max(0, deadline - Date.now()));
      const watch = stop && setInterval(() => {
        stopped = stop();
        if (stopped) resolve({ late: true });
      }, 50);
      const settle = (value: { result?: StepResult; error?: unknown }) => {
        clearTimeout(timer);
        if (watch) clearInterval(watch);
        resolve(value);
      };
      step.then((result) => settle({ result }), (error: unknown) => settle({ error }));
    });
    stopped ??= stop?.();
    if (stopped) throw new Error(`stopped stepping the follower towards block ${block} after ${Date.now() - started} ms: ${stopped}; ${where()}`);
    if (outcome.late) {
      throw new Error(`the follower did not pass block ${block} within ${timeoutMs} ms: ${where()}; a step started ${Date.now() - stepStarted} ms ago had not ended`);
    }
    if (outcome.error !== undefined) {
      failures.push(outcome.error);
      await sleep(200);
    } else {
      steps.push(outcome.result!);
      if (outcome.result!.checkpoint >= block) return { steps, failures };
    }
    if (Date.now() > deadline) throw new Error(`the follower did not pass block ${block} within ${timeoutMs} ms: ${where()}`);
  }
}

const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message.split('\n')[0]}` : String(error));

/** Counts of each item, for a failure's message: those counted more than once. */
export function repeated<T>(items: T[]): Map<T, number> {
  const counts = new Map<T, number>();
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1);
  return new Map([...counts].filter(([, count]) => count > 1));
}
