import { Conflict } from '../errors';
import type { WebhookStatus } from '../schemas/fields';
import type { Deactivation } from '../schemas/stats';
import type { Webhook } from '../schemas/webhook';
import { readItems } from './batch';
import { tableName } from './client';
import { unlessConditionFails } from './conditional-write';
import { deleteItem, getItem, queryItems, queryPages, queryUntilFull, updateItem, type Item } from './items';
import { GSI1, GSI2, inactiveWebhooksPartition, internalTxWebhooksPartition, TABLE_KEYS, WEBHOOK_SORT_KEY_PREFIX, webhookKey, webhookStatusIndexKey } from './table';

/**
 * `deactivation`: while the webhook is inactive, when and why it was made so, for the statistics
 * (the Webhook API's shape, the hosted contract's, has no such field).
 */
type WebhookItem = Webhook &
  ReturnType<typeof webhookKey> &
  ReturnType<typeof webhookStatusIndexKey> & { addressCount: number; inactivePartition: string; deactivation?: Deactivation };

/** The webhook as the API shows it: exactly the spec's fields, in the spec's order (no keys, no deactivation). */
export function toWebhook(item: Item): Webhook {
  const { id, url, chainId, status, createdAt, name, description, eventType, metadata, includeInternalTxs, includeLogs } =
    item as unknown as Webhook;
  return {
    id,
    url,
    chainId,
    status,
    createdAt,
    name,
    description,
    eventType,
    metadata: { eventSignatures: metadata.eventSignatures, addresses: metadata.addresses },
    includeInternalTxs,
    includeLogs,
  };
}

const existsCondition = 'attribute_exists(pk)';

/** Every key of a webhook's item: in the table, and in gsi1 under its status. */
function webhookItemKeys(account: string, id: string, status: WebhookStatus) {
  const { pk, sk } = webhookKey(account, id);
  const { gsi1pk, gsi1sk } = webhookStatusIndexKey(account, status, id);
  return { pk, sk, gsi1pk, gsi1sk };
}

/**
 * Where the webhook sits in the sparse gsi2: under its chain's inactive webhooks while inactive (the
 * matcher reads them), under those that want internal transactions while active and asking for
 * them (the follower traces the chain's blocks while there is one), else nowhere.
 */
export function webhookGsi2Partition({ chainId, status, includeInternalTxs }: Pick<Webhook, 'chainId' | 'status' | 'includeInternalTxs'>): string | undefined {
  if (status === 'inactive') return inactiveWebhooksPartition(chainId);
  return includeInternalTxs ? internalTxWebhooksPartition(chainId) : undefined;
}

/**
 * The table item of an account's webhook: its keys, its fields, how many addresses it watches (its
 * `metadata.addresses` shows the first of them) and its gsi2 partition (webhookGsi2Partition).
 * Assigned onto the keys, not spread: V8 takes a slow path for every spread after the first in an
 * object literal.
 */
export function webhookItem(account: string, webhook: Webhook, addressCount: number): WebhookItem {
  const item = Object.assign(webhookItemKeys(account, webhook.id, webhook.status), webhook) as WebhookItem;
  item.addressCount = addressCount;
  item.inactivePartition = inactiveWebhooksPartition(webhook.chainId);
  const partition = webhookGsi2Partition(webhook);
  if (partition) (item as Item)[GSI2.partitionKey] = partition;
  return item;
}

const readWebhookItem = (account: string, id: string) => getItem({ TableName: tableName(), Key: webhookKey(account, id), ConsistentRead: true });

export async function getWebhookItem(account: string, id: string): Promise<Webhook | undefined> {
  const item = await readWebhookItem(account, id);
  return item && toWebhook(item);
}

/** A webhook with, while it is inactive, when and why it was made so (absent when that was not kept). */
export interface WebhookWithDeactivation {
  webhook: Webhook;
  deactivation?: Deactivation;
}

function withDeactivation(item: Item): WebhookWithDeactivation {
  const webhook = toWebhook(item);
  const deactivation = webhook.status === 'inactive' ? (item.deactivation as Deactivation | undefined) : undefined;
  return deactivation ? { webhook, deactivation } : { webhook };
}

export async function getWebhookWithDeactivation(account: string, id: string): Promise<WebhookWithDeactivation | undefined> {
  const item = await readWebhookItem(account, id);
  return item && withDeactivation(item);
}

/** The chain of the account's webhook, read consistently from its item; undefined when it does not exist. */
export async function webhookChainId(account: string, id: string): Promise<string | undefined> {
  return (await readWebhookItem(account, id))?.chainId;
}

/**
 * The webhooks of `refs` that exist (consistent batch reads), and how many requests that took. An
 * item that cannot be read as a webhook comes back `damaged`, with why, and stops no other.
 */
export async function readWebhookItems(
  refs: { account: string; id: string }[],
): Promise<{ webhooks: Webhook[]; damaged: { id: string; error: unknown }[]; requests: number }> {
  const { items, requests } = await readItems(refs.map(({ account, id }) => webhookKey(account, id)));
  const webhooks: Webhook[] = [];
  const damaged: { id: string; error: unknown }[] = [];
  for (const item of items) {
    try {
      webhooks.push(toWebhook(item));
    } catch (error) {
      damaged.push({ id: item.id, error });
    }
  }
  return { webhooks, damaged, requests };
}

/** Tries of an update whose gsi2 partition depends on a field another writer changed meanwhile. */
const UPDATE_TRIES = 5;

/**
 * Field values to set; `metadata.addresses` style keys set one metadata field. Returns undefined when
 * absent. Made inactive, the webhook keeps `deactivation` (one already kept stays: the webhook was
 * inactive already); made active, it forgets it. Its gsi2 partition follows its status and
 * `includeInternalTxs` (webhookGsi2Partition): when a change decides it with a field it does not
 * set, that field is read first and the write made on the condition that it is unchanged.
 */
export async function updateWebhookItem(
  account: string,
  id: string,
  changes: Record<string, unknown>,
  deactivation?: Deactivation,
): Promise<Webhook | undefined> {
  const status = changes.status as WebhookStatus | undefined;
  const internal = changes.includeInternalTxs as boolean | undefined;
  const needsCurrent = status !== 'inactive' && (status !== undefined || internal !== undefined);
  for (let attempt = 1; ; attempt += 1) {
    const current = needsCurrent ? await readWebhookItem(account, id) : undefined;
    if (needsCurrent && !current) return undefined;
    const expected = needsCurrent
      ? { chainId: current!.chainId as string, status: current!.status as WebhookStatus, includeInternalTxs: current!.includeInternalTxs === true }
      : undefined;
    try {
      const updated = await updateWebhookItemOnce(account, id, changes, deactivation, expected);
      return updated && toWebhook(updated);
    } catch (error) {
      if (!(error instanceof WebhookChangedMeanwhile)) throw error;
      if (attempt >= UPDATE_TRIES) throw new Conflict(`Webhook ${id} was changed by other requests while this one changed it; send it again`);
    }
  }
}

class WebhookChangedMeanwhile extends Error {
  override readonly name = 'WebhookChangedMeanwhile';
}

async function updateWebhookItemOnce(
  account: string,
  id: string,
  changes: Record<string, unknown>,
  deactivation: Deactivation | undefined,
  expected: Pick<Webhook, 'chainId' | 'status' | 'includeInternalTxs'> | undefined,
): Promise<Item | undefined> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const assignments: string[] = [];
  const set = (path: string, value: unknown) => {
    const placeholder = path.split('.').map((part) => {
      const name = `#${part}`;
      names[name] = part;
      return name;
    });
    const valueName = `:v${assignments.length}`;
    values[valueName] = value;
    assignments.push(`${placeholder.join('.')} = ${valueName}`);
  };
  for (const [path, value] of Object.entries(changes)) set(path, value);
  const status = changes.status as WebhookStatus | undefined;
  if (status) set(GSI1.partitionKey, webhookStatusIndexKey(account, status, id).gsi1pk);
  const removals: string[] = [];
  const conditions = [existsCondition];
  if (status === 'inactive') {
    // The partition is the item's own, per chain.
    names['#gsi2pk'] = GSI2.partitionKey;
    assignments.push('#gsi2pk = inactivePartition');
    if (deactivation) {
      values[':deactivation'] = deactivation;
      assignments.push('deactivation = if_not_exists(deactivation, :deactivation)');
    }
  } else if (status !== undefined || changes.includeInternalTxs !== undefined) {
    const read = expected!;
    const partition = webhookGsi2Partition({ chainId: read.chainId, status: status ?? read.status, includeInternalTxs: (changes.includeInternalTxs as boolean | undefined) ?? read.includeInternalTxs });
    names['#status'] = 'status';
    Object.assign(values, { ':expectedStatus': read.status, ':expectedInternal': read.includeInternalTxs });
    conditions.push('#status = :expectedStatus', read.includeInternalTxs ? 'includeInternalTxs = :expectedInternal' : '(attribute_not_exists(includeInternalTxs) OR includeInternalTxs = :expectedInternal)');
    names['#gsi2pk'] = GSI2.partitionKey;
    if (partition) {
      values[':partition'] = partition;
      assignments.push('#gsi2pk = :partition');
    } else removals.push('#gsi2pk');
    if (status === 'active') removals.push('deactivation');
  }
  const write = updateItem({
    TableName: tableName(),
    Key: webhookKey(account, id),
    UpdateExpression: `SET ${assignments.join(', ')}${removals.length > 0 ? ` REMOVE ${removals.join(', ')}` : ''}`,
    ConditionExpression: conditions.join(' AND '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValues: 'ALL_NEW',
  });
  if (!expected) return unlessConditionFails(write);
  const updated = await unlessConditionFails(write);
  // Absent, or changed meanwhile: which, a read tells (the caller's next try).
  if (!updated) throw new WebhookChangedMeanwhile();
  return updated;
}

/** Deletes the webhook's item; returns it as it was, undefined when there was none. */
export async function deleteWebhookItem(account: string, id: string): Promise<Item | undefined> {
  return unlessConditionFails(
    deleteItem({ TableName: tableName(), Key: webhookKey(account, id), ConditionExpression: existsCondition, ReturnValues: 'ALL_OLD' }),
  );
}

export interface WebhookPageQuery {
  account: string;
  status?: WebhookStatus;
  limit: number;
  /** Id of the last webhook already returned; the page starts just after it. */
  afterId?: string;
}

export interface WebhookPageResult {
  webhooks: Webhook[];
  /** Items DynamoDB read to answer (its ScannedCount), for the benchmark's cost figures. */
  itemsRead: number;
  requests: number;
}

/**
 * Up to `limit` webhooks, newest first, after `afterId`. A keyed Query with no filter reads exactly
 * the items it returns; it loops only when DynamoDB stops at its 1 MB page before `limit` items.
 */
export async function queryWebhooks({ account, status, limit, afterId }: WebhookPageQuery): Promise<WebhookPageResult> {
  // One status: gsi1, which serves only eventually consistent reads. All: the table, read consistently.
  const source = status
    ? { keys: GSI1, indexName: GSI1.indexName, consistentRead: undefined, partition: webhookStatusIndexKey(account, status, '').gsi1pk }
    : { keys: TABLE_KEYS, indexName: undefined, consistentRead: true, partition: webhookKey(account, '').pk };
  // A page starts after its last webhook's key in the table or in the index the page reads.
  let startKey: Item | undefined;
  if (afterId !== undefined) startKey = status ? webhookItemKeys(account, afterId, status) : webhookKey(account, afterId);
  const { items, itemsRead, requests } = await queryUntilFull(
    {
      TableName: tableName(),
      IndexName: source.indexName,
      ConsistentRead: source.consistentRead,
      KeyConditionExpression: `${source.keys.partitionKey} = :pk AND begins_with(${source.keys.sortKey}, :prefix)`,
      ExpressionAttributeValues: { ':pk': source.partition, ':prefix': WEBHOOK_SORT_KEY_PREFIX },
      ScanIndexForward: false,
      ExclusiveStartKey: startKey,
    },
    limit,
  );
  return { webhooks: items.map(toWebhook), itemsRead, requests };
}

/** The account's webhooks of one status in gsi1, newest first. */
const statusPartitionQuery = (account: string, status: WebhookStatus) => ({
  TableName: tableName(),
  IndexName: GSI1.indexName,
  KeyConditionExpression: `${GSI1.partitionKey} = :pk AND begins_with(${GSI1.sortKey}, :prefix)`,
  ExpressionAttributeValues: { ':pk': webhookStatusIndexKey(account, status, '').gsi1pk, ':prefix': WEBHOOK_SORT_KEY_PREFIX },
  ScanIndexForward: false,
});

/** How many of the account's webhooks have `status`, from `startKey` on: DynamoDB counts them (Select COUNT) and returns none. */
async function countWebhooksFrom(account: string, status: WebhookStatus, startKey?: Item): Promise<number> {
  let count = 0;
  for await (const page of queryPages({ ...statusPartitionQuery(account, status), Select: 'COUNT' as const, ExclusiveStartKey: startKey })) count += page.scannedCount;
  return count;
}

/** How many of the account's webhooks have `status` (gsi1: eventually consistent); each is read, none returned. */
export const countWebhooksWithStatus = (account: string, status: WebhookStatus) => countWebhooksFrom(account, status);

/**
 * The account's inactive webhooks, newest first: the first `limit` with when and why each was made
 * inactive, and how many there are in all (those past `limit` counted, not returned). From gsi1:
 * eventually consistent.
 */
export async function queryInactiveWebhooks(account: string, limit: number): Promise<{ webhooks: WebhookWithDeactivation[]; count: number }> {
  const items: Item[] = [];
  let startKey: Item | undefined;
  for await (const page of queryPages(statusPartitionQuery(account, 'inactive'), limit)) {
    items.push(...page.items);
    startKey = page.lastEvaluatedKey;
  }
  const beyond = startKey ? await countWebhooksFrom(account, 'inactive', startKey) : 0;
  return { webhooks: items.map(withDeactivation), count: items.length + beyond };
}

/** Whether an active webhook on the chain asks for internal transactions: one read of at most one key, from its gsi2 partition. */
export async function chainHasInternalTxWebhooks(chainId: string): Promise<boolean> {
  const { items } = await queryItems({
    TableName: tableName(),
    IndexName: GSI2.indexName,
    KeyConditionExpression: `${GSI2.partitionKey} = :pk`,
    ExpressionAttributeValues: { ':pk': internalTxWebhooksPartition(chainId) },
    Limit: 1,
  });
  return items.length > 0;
}
