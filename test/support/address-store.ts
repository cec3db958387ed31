import { randomBytes } from 'node:crypto';
import { uuidHex } from '../../lib/uuid';
import { ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { encodeFollowedChains, FOLLOWED_CHAINS_VARIABLE, publicFactsOf } from '../../lib/config/chains';
import { createWebhookBody } from '../../lib/schemas/webhook';
import { readItems } from '../../lib/store/batch';
import { dynamoDb, tableName } from '../../lib/store/client';
import { putItem, queryAllItems, queryItems, type Item } from '../../lib/store/items';
import { PURGES_PARTITION, WEBHOOK_ADDRESS_SORT_KEY_PREFIX, watchHeadKey, webhookAddressKey, addressOfWatchPartition } from '../../lib/store/table';
import type { Webhook } from '../../lib/schemas/webhook';
import { runAddressMaintenance } from '../../lib/addresses/maintenance';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { useEmbeddedStore } from './embedded-store';
import { randomAddress, webhookInput } from './factories';

/** Distinct random addresses, lower-case as the store keeps them. */
export const randomAddresses = (count: number): string[] => [...new Set(Array.from({ length: count }, randomAddress))];

/** A webhook created through the domain function, watching `addresses` on `chainId`. */
export function createWatchingWebhook(account: string, chainId: string, addresses: string[]): Promise<Webhook> {
  return createWebhook(account, createWebhookBody.parse(webhookInput({ chainId, metadata: { addresses } })));
}

/** Rewrites the heads of the addresses with a new token and no saved watchers, as an add or remove does. */
export async function rewriteHeads(chainId: string, addresses: string[]): Promise<void> {
  for (const address of addresses) {
    await putItem({ TableName: tableName(), Item: { ...watchHeadKey(chainId, address), token: randomBytes(8).toString('base64url') } });
  }
}

/** The heads that exist among those of the addresses, by address. */
export async function headsOf(chainId: string, addresses: string[]): Promise<Map<string, Item>> {
  const { items } = await readItems(addresses.map((address) => watchHeadKey(chainId, address)));
  return new Map(items.map((item) => [addressOfWatchPartition(item.pk as string), item]));
}

/** The webhook's address items, counted with a consistent keys-only query. */
export async function countAddressItems(account: string, webhookId: string): Promise<number> {
  let count = 0;
  let startKey: Item | undefined;
  do {
    const page = await queryItems({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': webhookAddressKey(account, webhookId, '').pk, ':prefix': WEBHOOK_ADDRESS_SORT_KEY_PREFIX },
      ConsistentRead: true,
      Select: 'COUNT',
      ExclusiveStartKey: startKey,
    });
    count += page.scannedCount;
    startKey = page.lastEvaluatedKey;
  } while (startKey);
  return count;
}

/** Every item of the table (keys and attributes), read consistently. */
export async function scanTable(): Promise<Item[]> {
  const items: Item[] = [];
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await dynamoDb().send(new ScanCommand({ TableName: tableName(), ConsistentRead: true, ExclusiveStartKey: startKey }));
    for (const item of page.Items ?? []) items.push(unmarshall(item));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** The items whose key (pk or sk) names the webhook's id. */
/** Items whose keys name the webhook, in any of the forms keys carry its id in (as it is, or a watcher's sort key). */
export const itemsNaming = (items: Item[], webhookId: string) => {
  const watcherSortKey = Buffer.from(uuidHex(webhookId), 'hex').toString('base64url');
  return items.filter((item) => String(item.pk).includes(webhookId) || String(item.sk).includes(webhookId) || item.sk === watcherSortKey);
};

/** Maintenance passes (short ones, as the scheduled function and npm start's loop run them) until no purge job is left. */
export async function maintainUntilPurged(): Promise<number> {
  let passes = 0;
  const deadline = Date.now() + 60_000;
  for (;;) {
    passes += 1;
    await runAddressMaintenance(Date.now() + 2_000);
    const { items: jobs } = await queryAllItems({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': PURGES_PARTITION },
      ConsistentRead: true,
    });
    if (jobs.length === 0) return passes;
    if (Date.now() > deadline) throw new Error(`purge jobs left after a minute: ${JSON.stringify(jobs)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The embedded store for a test file whose tests each take a chain of their own (the function
 * returned gives the next), so that no test sees another's watchers; all of them are followed.
 */
export function useStoreWithFreshChains(count = 50): () => string {
  const chains = Array.from({ length: count }, (_, index) => String(900_001 + index));
  useEmbeddedStore({ [FOLLOWED_CHAINS_VARIABLE]: encodeFollowedChains(chains.map(publicFactsOf)) });
  return () => chains.shift()!;
}

/** Watchers' webhook ids, in order. */
export const watcherIds = (watchers: string[] | undefined) => [...(watchers ?? [])].sort();
