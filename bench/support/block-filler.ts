import { randomBytes } from 'node:crypto';
import { encodeFunctionData } from 'viem';
import { DevToken, Forwarder } from '../../infra/dev-contracts.generated';
import type { Hex } from '../../lib/chains/rpc-types';

/** The three kinds of a full block's transactions: a transfer of the chain's coin, an ERC-20 transfer (a log), a call that makes an internal call. */
export type TransactionKind = 'native' | 'erc20' | 'internal';
export const TRANSACTION_KINDS: TransactionKind[] = ['native', 'erc20', 'internal'];

/** A transaction to mine: its kind and who gets the coin or the tokens. */
export interface PlannedTransaction {
  kind: TransactionKind;
  to: Hex;
}

export interface MinedBlock {
  number: number;
  hash: Hex;
  /** performance.now() when `evm_mine` answered. */
  minedAt: number;
  /** Each transaction's hash, with what it was planned as. */
  transactions: Map<Hex, PlannedTransaction>;
}

/** anvil's first dev account, which it signs for. */
const DEV_ACCOUNT = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
/** Many senders with a few pending transactions each, as on a busy chain: a 3 000-transaction block takes 15 from each. */
const SENDERS = 200;
const SEND_BATCH = 200;
const GAS = { native: 21_000, erc20: 100_000, internal: 100_000 } satisfies Record<TransactionKind, number>;
const hex = (value: number | bigint) => `0x${value.toString(16)}` as Hex;
export const randomAddress = () => `0x${randomBytes(20).toString('hex')}` as Hex;

let rpcId = 0;

/** JSON-RPC calls to a node in one batch; throws the first error. */
export async function rpcBatch<T = unknown>(rpcUrl: string, calls: [method: string, params: unknown[]][]): Promise<T[]> {
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map(([method, params]) => ({ jsonrpc: '2.0', id: ++rpcId, method, params }))),
  });
  const answers = (await response.json()) as { id: number; result?: T; error?: { message: string } }[];
  answers.sort((a, b) => a.id - b.id);
  const failed = answers.find((answer) => answer.error);
  if (failed) throw new Error(`${calls[answers.indexOf(failed)]?.[0]}: ${failed.error!.message}`);
  return answers.map((answer) => answer.result as T);
}

export const rpcCall = async <T = unknown>(rpcUrl: string, method: string, params: unknown[] = []) => (await rpcBatch<T>(rpcUrl, [[method, params]]))[0]!;

/**
 * Mines blocks as full as a busy chain's on an anvil: the dev contracts deployed (an ERC-20 and a
 * forwarder, as `npm run chain` deploys them), SENDERS impersonated and funded accounts holding
 * tokens, automining off and the block gas limit out of the way. Each block's transactions are sent
 * in JSON-RPC batches, with the nonces counted here (anvil gives a batch's transactions of one
 * sender the same one), then mined at once.
 */
export class BlockFiller {
  private readonly nonces: number[];
  private next = 0;

  private constructor(
    readonly rpcUrl: string,
    readonly token: Hex,
    readonly forwarder: Hex,
    private readonly senders: Hex[],
  ) {
    this.nonces = senders.map(() => 0);
  }

  static async start(rpcUrl: string): Promise<BlockFiller> {
    const deployed: Hex[] = [];
    for (const contract of [DevToken, Forwarder]) {
      const hash = await rpcCall<Hex>(rpcUrl, 'eth_sendTransaction', [{ from: DEV_ACCOUNT, data: contract.bytecode }]);
      deployed.push((await rpcCall<{ contractAddress: Hex }>(rpcUrl, 'eth_getTransactionReceipt', [hash])).contractAddress);
    }
    const senders = Array.from({ length: SENDERS }, randomAddress);
    await rpcBatch(rpcUrl, senders.flatMap((sender) => [['anvil_setBalance', [sender, hex(10n ** 21n)]], ['anvil_impersonateAccount', [sender]]] satisfies [string, unknown[]][]));
    await rpcBatch(rpcUrl, [['evm_setAutomine', [false]], ['anvil_setBlockGasLimit', [hex(1_000_000_000)]]]);
    const filler = new BlockFiller(rpcUrl, deployed[0]!, deployed[1]!, senders);
    const nonce = Number(await rpcCall<Hex>(rpcUrl, 'eth_getTransactionCount', [DEV_ACCOUNT, 'pending']));
    await rpcBatch(
      rpcUrl,
      senders.map((sender, index) => ['eth_sendTransaction', [{ from: DEV_ACCOUNT, nonce: hex(nonce + index), gas: hex(GAS.erc20), to: filler.token, data: transferData(sender, 10n ** 21n) }]]),
    );
    await filler.mine(senders.length);
    return filler;
  }

  /** Sends the transactions to the node's pool, each from the next sender; their hashes, in order. */
  async submit(planned: PlannedTransaction[]): Promise<Map<Hex, PlannedTransaction>> {
    const calls = planned.map((transaction): [string, unknown[]] => {
      const sender = this.next++ % this.senders.length;
      return ['eth_sendTransaction', [{ from: this.senders[sender], nonce: hex(this.nonces[sender]!++), gas: hex(GAS[transaction.kind]), ...this.call(transaction) }]];
    });
    const batches: Promise<Hex[]>[] = [];
    for (let start = 0; start < calls.length; start += SEND_BATCH) batches.push(rpcBatch<Hex>(this.rpcUrl, calls.slice(start, start + SEND_BATCH)));
    const hashes = (await Promise.all(batches)).flat();
    return new Map(hashes.map((hash, index) => [hash, planned[index]!]));
  }

  /** Mines one block of what was submitted, checking that it holds all `expected` transactions. */
  async mine(expected: number): Promise<Omit<MinedBlock, 'transactions'>> {
    await rpcCall(this.rpcUrl, 'evm_mine');
    const minedAt = performance.now();
    const block = await rpcCall<{ number: Hex; hash: Hex; transactions: Hex[] }>(this.rpcUrl, 'eth_getBlockByNumber', ['latest', false]);
    if (block.transactions.length !== expected) throw new Error(`block ${Number(block.number)} holds ${block.transactions.length} transactions, not the ${expected} sent`);
    return { number: Number(block.number), hash: block.hash, minedAt };
  }

  /** One block of the transactions, sent and mined. */
  async mineBlock(planned: PlannedTransaction[]): Promise<MinedBlock> {
    const transactions = await this.submit(planned);
    return { ...(await this.mine(planned.length)), transactions };
  }

  private call({ kind, to }: PlannedTransaction) {
    if (kind === 'native') return { to, value: '0x1' };
    if (kind === 'erc20') return { to: this.token, data: transferData(to, 1n) };
    return { to: this.forwarder, value: '0x1', data: encodeFunctionData({ abi: Forwarder.abi, functionName: 'forward', args: [to] }) };
  }
}

const transferData = (to: Hex, amount: bigint) => encodeFunctionData({ abi: DevToken.abi, functionName: 'transfer', args: [to, amount] });
