/**
 * `address_activity` matching: which active webhooks a block's transactions notify. Per block, the
 * addresses it touches are looked up in the address index (`findActiveWatchers`), so that the cost
 * grows with the block and its matches, not with the number of watched addresses.
 */
import { findActiveWatchers } from '../addresses/watchers';
import { logger } from '../logger';
import type { Webhook } from '../schemas/webhook';
import { accountsOfWebhooks } from '../store/webhook-pointers';
import { readWebhookItems } from '../store/webhooks';
import { decodeTransfers } from './payload';
import type { BlockData, CallFrame } from './rpc-types';

/** How a transaction touches an address. */
interface Touch {
  /** The transaction's `from`, `to` or created contract. */
  direct: boolean;
  /** The `from` or `to` of one of its internal calls. */
  internal: boolean;
  /** The topic0 of each of its logs the address emitted or is a token transfer's party in. */
  topics: Set<string>;
}

export interface WebhookMatch {
  account: string;
  webhook: Webhook;
  /** The indexes of the block's transactions that notify it, in block order. */
  transactionIndexes: number[];
}

export interface BlockMatches {
  /** Per block given, the webhooks its transactions notify. */
  matches: WebhookMatch[][];
  /** Store reads the blocks cost: the benchmark's figure. */
  reads: number;
  /** Settles once the watchers read are saved for next time (findActiveWatchers): awaited before the caller's work ends. */
  saved: Promise<void>;
}

/**
 * Matches a run of blocks with one lookup of every address they touch: while catching up, the
 * store is asked once per batch of blocks, not once per block.
 */
export async function matchBlocks(chainId: string, blocks: BlockData[]): Promise<BlockMatches> {
  const touches = blocks.map((data) => data.block.transactions.map((_, index) => touchesOf(data, index)));
  const none = { matches: blocks.map(() => []), reads: 0, saved: Promise.resolve() };
  const addresses = new Set<string>();
  for (const block of touches) for (const touched of block) for (const address of touched.keys()) addresses.add(address);
  if (addresses.size === 0) return none;
  const watchers = await findActiveWatchers(chainId, [...addresses]);
  let reads = watchers.reads.batchGets + watchers.reads.watcherQueries + watchers.reads.inactiveQueries;
  if (watchers.matches.size === 0) return { ...none, reads, saved: watchers.saved };

  const webhooks = await activeWebhooks(chainId, [...new Set([...watchers.matches.values()].flat())]).catch(async (error: unknown) => {
    // The saves under way end before the caller's work does, as they would have had it gone on.
    await watchers.saved;
    throw error;
  });
  reads += webhooks.reads;
  const matches = touches.map((block, blockIndex) => {
    const byWebhook = new Map<string, WebhookMatch>();
    block.forEach((touched, index) => {
      const logs = blocks[blockIndex]!.receipts[index]!.logs;
      const topics = new Set(logs.map((log) => log.topics[0]?.toLowerCase()).filter((topic) => topic !== undefined));
      for (const [address, touch] of touched) {
        for (const id of watchers.matches.get(address) ?? []) {
          const found = webhooks.byId.get(id);
          const match = byWebhook.get(id);
          if (!found || match?.transactionIndexes.at(-1) === index || !notifies(found.webhook, touch, topics)) continue;
          if (match) match.transactionIndexes.push(index);
          else byWebhook.set(id, { ...found, transactionIndexes: [index] });
        }
      }
    });
    return [...byWebhook.values()];
  });
  return { matches, reads, saved: watchers.saved };
}

/**
 * The definition the README gives: a watched address touched directly, through a log (emitter or
 * token transfer party) or, with `includeInternalTxs`, through an internal call. With event
 * signatures, the transaction must have a log with one of them, and only such logs count.
 */
function notifies(webhook: Webhook, touch: Touch, transactionTopics: Set<string>): boolean {
  const signatures = webhook.metadata.eventSignatures.map((signature) => signature.toLowerCase());
  if (signatures.length > 0 && !signatures.some((signature) => transactionTopics.has(signature))) return false;
  if (touch.direct || (touch.internal && webhook.includeInternalTxs)) return true;
  return signatures.length === 0 ? touch.topics.size > 0 : signatures.some((signature) => touch.topics.has(signature));
}

/** Every address the transaction touches (lower-case), and how. */
function touchesOf(data: BlockData, index: number): Map<string, Touch> {
  const touched = new Map<string, Touch>();
  const touch = (address: string | null | undefined) => {
    if (!address) return undefined;
    const key = address.toLowerCase();
    let entry = touched.get(key);
    if (!entry) touched.set(key, (entry = { direct: false, internal: false, topics: new Set() }));
    return entry;
  };
  const transaction = data.block.transactions[index]!;
  const receipt = data.receipts[index]!;
  for (const address of [transaction.from, transaction.to, receipt.contractAddress]) {
    const entry = touch(address);
    if (entry) entry.direct = true;
  }
  for (const log of receipt.logs) {
    const topic0 = log.topics[0]?.toLowerCase();
    if (topic0) touch(log.address)!.topics.add(topic0);
  }
  for (const transfer of decodeTransfers(receipt)) {
    for (const party of [transfer.from, transfer.to]) touch(party)!.topics.add(transfer.topic0);
  }
  const trace = data.traces?.[index];
  for (const frame of trace ? innerCalls(trace) : []) {
    for (const address of [frame.from, frame.to]) {
      const entry = touch(address);
      if (entry) entry.internal = true;
    }
  }
  return touched;
}

function* innerCalls(frame: CallFrame): Generator<CallFrame> {
  for (const call of frame.calls ?? []) {
    yield call;
    yield* innerCalls(call);
  }
}

/** The webhooks among `ids` that are active and on the chain, with their accounts: two batch reads. */
async function activeWebhooks(chainId: string, ids: string[]) {
  const pointers = await accountsOfWebhooks(ids);
  const read = await readWebhookItems(pointers.webhooks);
  const accountOf = new Map(pointers.webhooks.map(({ id, account }) => [id, account]));
  for (const { id, error } of read.damaged) {
    // One damaged item stops no other webhook: this one is not notified until it is repaired.
    logger.error('webhook item cannot be read; its notifications are not recorded', { chainId, account: accountOf.get(id), webhookId: id, error: String(error) });
  }
  const byId = new Map<string, { account: string; webhook: Webhook }>();
  for (const webhook of read.webhooks) {
    if (webhook.status === 'active' && webhook.chainId === chainId) byId.set(webhook.id, { account: accountOf.get(webhook.id)!, webhook });
  }
  return { byId, reads: pointers.requests + read.requests };
}
