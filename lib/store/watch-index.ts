import { randomBytes } from 'node:crypto';
import { tableName } from './client';
import { unlessConditionFails } from './conditional-write';
import { readItems, type ItemWrite } from './batch';
import { deleteItem, queryAllItems, queryItems, updateItem, type Item } from './items';
import { uuidFromHex, uuidHex } from '../uuid';
import {
  addressOfWatchPartition,
  GSI2,
  inactiveWebhooksPartition,
  watcherKey,
  webhookIdOfSortKey,
  webhookIdOfWatcherSortKey,
  watchHeadKey,
} from './table';

/**
 * The address index the matcher reads: per (chain, address), a head item and one watcher item per
 * webhook. Every write to it is a batch put or delete, so adding an address costs no more than
 * writing its items. The head is rewritten with a new random token whenever the address gains or
 * loses a watcher: the matcher keeps a copy of the watchers in the head, valid only for the token it
 * was made for, so a change can never leave it a stale one.
 */
export function watcherWrites(chainId: string, webhookId: string, addresses: string[], kind: 'add' | 'remove'): ItemWrite[] {
  return addresses.map((address) => {
    const key = watcherKey(chainId, address, webhookId);
    return kind === 'add' ? { put: { ...key } } : { delete: key };
  });
}

/** Written after the address's watcher items, never with them (see `changeWrites`). */
export function headWrites(chainId: string, addresses: string[]): ItemWrite[] {
  return addresses.map((address) => ({ put: { ...watchHeadKey(chainId, address), token: randomBytes(8).toString('base64url') } }));
}

export interface WatchHead {
  address: string;
  token: string;
  /** The ids of the webhooks watching it as of `token`, when the matcher has saved them. */
  watchers?: string[];
}

const UUID_BYTES = 16;

/** The ids, 16 bytes each, one after the other: 10 000 watchers are 160 KB. */
const encodeWatchers = (ids: string[]) => Buffer.from(ids.map(uuidHex).join(''), 'hex');

function decodeWatchers(encoded: Uint8Array): string[] {
  const hex = Buffer.from(encoded).toString('hex');
  const ids: string[] = [];
  for (let offset = 0; offset < hex.length; offset += UUID_BYTES * 2) ids.push(uuidFromHex(hex.slice(offset, offset + UUID_BYTES * 2)));
  return ids;
}

/** The heads of the addresses that have one (consistent batch reads, 100 addresses a request), and how many requests that took. */
export async function readWatchHeads(chainId: string, addresses: string[]): Promise<{ heads: WatchHead[]; requests: number }> {
  const { items, requests } = await readItems(addresses.map((address) => watchHeadKey(chainId, address)));
  return { heads: items.map(toWatchHead), requests };
}

function toWatchHead(item: Item): WatchHead {
  const address = addressOfWatchPartition(item.pk as string);
  const saved = item.savedToken === item.token && item.watchers !== undefined;
  return { address, token: item.token, watchers: saved ? decodeWatchers(item.watchers) : undefined };
}

/** The ids of the webhooks watching the address, read consistently. */
export async function queryWatchers(chainId: string, address: string): Promise<{ watchers: string[]; requests: number }> {
  const head = watchHeadKey(chainId, address);
  const { items, requests } = await queryAllItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND sk > :head',
    ExpressionAttributeValues: { ':pk': head.pk, ':head': head.sk },
    ConsistentRead: true,
  });
  return { watchers: items.map((item) => webhookIdOfWatcherSortKey(item.sk as string)), requests };
}

/** Above this (18 750 watchers), the watchers are not saved in the head and the matcher queries them each time. */
const MAX_SAVED_WATCHERS_BYTES = 300_000;

/** Saves the watchers in the head, if its token is still the one they were read for. */
export async function saveWatchers(chainId: string, head: WatchHead, watchers: string[]): Promise<void> {
  if (watchers.length * UUID_BYTES > MAX_SAVED_WATCHERS_BYTES) return;
  const encoded = encodeWatchers(watchers);
  await unlessConditionFails(
    updateItem({
      TableName: tableName(),
      Key: watchHeadKey(chainId, head.address),
      UpdateExpression: 'SET watchers = :watchers, savedToken = :token',
      ConditionExpression: '#token = :token',
      ExpressionAttributeNames: { '#token': 'token' },
      ExpressionAttributeValues: { ':watchers': encoded, ':token': head.token },
    }),
  );
}

/**
 * Deletes a head that has no watcher left, unless a write gave it a new token since it was read: a
 * watcher added concurrently is written before its head, so either the read saw that watcher or the
 * token has changed.
 */
export async function deleteHeadIfUnchanged(chainId: string, address: string, token: string): Promise<void> {
  await unlessConditionFails(
    deleteItem({
      TableName: tableName(),
      Key: watchHeadKey(chainId, address),
      ConditionExpression: '#token = :token',
      ExpressionAttributeNames: { '#token': 'token' },
      ExpressionAttributeValues: { ':token': token },
    }),
  );
}

/**
 * Ids of the chain's inactive webhooks, from the sparse gsi2 that a webhook's status change moves
 * it in and out of (the same item's write). Keys only: about 7 000 ids a request.
 */
export async function inactiveWebhookIds(chainId: string): Promise<{ ids: Set<string>; requests: number }> {
  const { items, requests } = await queryAllItems({
    TableName: tableName(),
    IndexName: GSI2.indexName,
    KeyConditionExpression: `${GSI2.partitionKey} = :pk`,
    ExpressionAttributeValues: { ':pk': inactiveWebhooksPartition(chainId) },
  });
  return { ids: new Set(items.map((item) => webhookIdOfSortKey(item.sk as string))), requests };
}

/** Whether the address still has a watcher, and its head's token if it has a head; one read of at most two items. */
export async function watchState(chainId: string, address: string): Promise<{ headToken?: string; watched: boolean }> {
  const head = watchHeadKey(chainId, address);
  const { items } = await queryItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': head.pk },
    ConsistentRead: true,
    Limit: 2,
  });
  const headItem = items.find((item) => item.sk === head.sk);
  return { headToken: headItem?.token as string | undefined, watched: items.some((item) => item.sk !== head.sk) };
}
