import { tableName } from './client';
import { conditionHeld, unlessConditionFails } from './conditional-write';
import { getItem, putItem, queryAllItems, queryItems, queryUntilFull, updateItem, type Item } from './items';
import { accountKey, apiKeyAccountIndexKey, apiKeyHashOfPartition, apiKeyKey, GSI1 } from './table';

/** An API key as the table holds it: never the key itself, only what is derived from or made beside it. */
export interface ApiKeyRecord {
  /** First 12 hex digits of the key's hash: names a key in listings without revealing it. */
  keyId: string;
  account: string;
  /** The caller's label for the key, given when it was made. */
  name?: string;
  createdAt: string;
  revokedAt?: string;
  /** When the key last authorized a call, to within an hour (lib/keys/api-keys.ts). */
  lastUsedAt?: string;
  /**
   * Random, made with the key and unrelated to it: what the authorizer names to API Gateway as
   * `usageIdentifierKey`, and the value of the key's API Gateway API key on AWS. Absent on keys made
   * before it existed (their API Gateway key's value is the key itself).
   */
  usageIdentifier?: string;
  /** On AWS: the API Gateway API key that puts the caller under a usage plan. */
  apiGatewayKeyId?: string;
  usagePlan?: string;
}

/**
 * A key counted on its account's item, by its id: the hash it is stored under, and when it was
 * counted (a key is counted before its item is written).
 */
export interface CountedApiKey {
  keyHash: string;
  countedAt: string;
}

/**
 * The account item's count of its keys that are not revoked (`activeKeys`), with each counted key's
 * hash by its id (`activeKeyHashes`): both move together, in single-item conditional updates.
 * Undefined while the account has no count (an account made before it existed).
 */
export interface AccountKeyCount {
  activeKeys: number;
  keys: Record<string, CountedApiKey>;
}

export async function getAccountKeyCount(account: string): Promise<AccountKeyCount | undefined> {
  const item = await getItem({
    TableName: tableName(),
    Key: accountKey(account),
    ConsistentRead: true,
    ProjectionExpression: 'activeKeys, activeKeyHashes',
  });
  if (item?.activeKeys === undefined) return undefined;
  return { activeKeys: item.activeKeys as number, keys: (item.activeKeyHashes ?? {}) as Record<string, CountedApiKey> };
}

/**
 * Starts the account's count with `keys` (the account item is made if missing), unless it has one.
 * Whether it started it.
 */
export async function startAccountKeyCount(account: string, keys: Record<string, CountedApiKey>, now: string): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: accountKey(account),
      UpdateExpression:
        'SET activeKeys = :count, activeKeyHashes = :keys, account = if_not_exists(account, :account), createdAt = if_not_exists(createdAt, :now)',
      ConditionExpression: 'attribute_not_exists(activeKeys)',
      ExpressionAttributeValues: { ':count': Object.keys(keys).length, ':keys': keys, ':account': account, ':now': now },
    }),
  );
}

/**
 * Counts the key, unless the account has no count, already counts a key under its id, or (with
 * `limit`) already counts `limit` keys. Whether it counted it.
 */
export async function countAccountKey(account: string, keyId: string, counted: CountedApiKey, limit?: number): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: accountKey(account),
      UpdateExpression: 'SET activeKeyHashes.#id = :counted ADD activeKeys :one',
      ConditionExpression: `attribute_exists(activeKeys) AND attribute_not_exists(activeKeyHashes.#id)${limit === undefined ? '' : ' AND activeKeys < :limit'}`,
      ExpressionAttributeNames: { '#id': keyId },
      ExpressionAttributeValues: { ':counted': counted, ':one': 1, ...(limit === undefined ? {} : { ':limit': limit }) },
    }),
  );
}

/**
 * Stops counting the key stored under `keyHash`, unless it is not counted or (with `keepOne`) it is
 * the last key counted. Whether it stopped.
 */
export async function uncountAccountKey(account: string, keyId: string, keyHash: string, { keepOne }: { keepOne: boolean }): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: accountKey(account),
      UpdateExpression: 'REMOVE activeKeyHashes.#id ADD activeKeys :minusOne',
      ConditionExpression: `activeKeyHashes.#id.keyHash = :keyHash${keepOne ? ' AND activeKeys > :one' : ''}`,
      ExpressionAttributeNames: { '#id': keyId },
      ExpressionAttributeValues: { ':keyHash': keyHash, ':minusOne': -1, ...(keepOne ? { ':one': 1 } : {}) },
    }),
  );
}

export async function putApiKeyItem(keyHash: string, record: ApiKeyRecord): Promise<void> {
  await putItem({
    TableName: tableName(),
    Item: { ...apiKeyKey(keyHash), ...apiKeyAccountIndexKey(record.account, record.createdAt), ...record },
    ConditionExpression: 'attribute_not_exists(pk)',
  });
}

/** `consistent`: a read that sees every write made before it (a revocation a moment ago). */
export async function getApiKeyItem(keyHash: string, { consistent = false } = {}): Promise<ApiKeyRecord | undefined> {
  const item = await getItem({ TableName: tableName(), Key: apiKeyKey(keyHash), ConsistentRead: consistent || undefined });
  return item && toRecord(item);
}

/**
 * Sets revokedAt unless it is set (the first revocation time stays). The item as it was before,
 * or undefined when there is no key with that hash.
 */
export async function markApiKeyRevoked(keyHash: string, now: string): Promise<ApiKeyRecord | undefined> {
  const before = await unlessConditionFails(
    updateItem({
      TableName: tableName(),
      Key: apiKeyKey(keyHash),
      UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :now)',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':now': now },
      ReturnValues: 'ALL_OLD',
    }),
  );
  return before && toRecord(before);
}

/**
 * Sets lastUsedAt to `now` unless it is already `since` or later: of the authorizers that find it
 * stale at once, one writes. Whether it wrote.
 */
export async function markApiKeyUsed(keyHash: string, now: string, since: string): Promise<boolean> {
  const written = await unlessConditionFails(
    updateItem({
      TableName: tableName(),
      Key: apiKeyKey(keyHash),
      UpdateExpression: 'SET lastUsedAt = :now',
      ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(lastUsedAt) OR lastUsedAt < :since)',
      ExpressionAttributeValues: { ':now': now, ':since': since },
    }).then(() => true),
  );
  return written ?? false;
}

/** Where a page of an account's keys ended: the last key's creation time and id. */
export interface ApiKeyPagePosition {
  createdAt: string;
  keyId: string;
}

/**
 * Up to `limit` of the account's keys, newest first, after `after`; and whether more follow. The
 * index orders keys created in the same millisecond its own way: the page starts after the key
 * itself, found by its id among those of its millisecond (one small read).
 */
export async function queryAccountApiKeyPage(account: string, limit: number, after?: ApiKeyPagePosition): Promise<{ records: ApiKeyRecord[]; more: boolean }> {
  const partition = apiKeyAccountIndexKey(account, '').gsi1pk;
  const index = { TableName: tableName(), IndexName: GSI1.indexName };
  let startKey: Item | undefined;
  let before: string | undefined;
  if (after) {
    const { gsi1sk } = apiKeyAccountIndexKey(account, after.createdAt);
    const { items } = await queryItems({
      ...index,
      KeyConditionExpression: '#pk = :pk AND #sk = :sk',
      ExpressionAttributeNames: { '#pk': GSI1.partitionKey, '#sk': GSI1.sortKey },
      ExpressionAttributeValues: { ':pk': partition, ':sk': gsi1sk },
    });
    const last = items.find((item) => item.keyId === after.keyId);
    // Keys are never deleted, so it is there; were it not, the page would start at the millisecond before.
    if (last) startKey = { pk: last.pk, sk: last.sk, gsi1pk: partition, gsi1sk };
    else before = gsi1sk;
  }
  const { items } = await queryUntilFull(
    {
      ...index,
      KeyConditionExpression: before === undefined ? '#pk = :pk' : '#pk = :pk AND #sk < :before',
      ExpressionAttributeNames: { '#pk': GSI1.partitionKey, ...(before === undefined ? {} : { '#sk': GSI1.sortKey }) },
      ExpressionAttributeValues: { ':pk': partition, ...(before === undefined ? {} : { ':before': before }) },
      ScanIndexForward: false,
      ExclusiveStartKey: startKey,
    },
    limit + 1,
  );
  return { records: items.slice(0, limit).map(toRecord), more: items.length > limit };
}

/** The account's keys, oldest first, each with the hash it is stored under. */
export async function queryAccountApiKeys(account: string): Promise<{ keyHash: string; record: ApiKeyRecord }[]> {
  const { items } = await queryAllItems({
    TableName: tableName(),
    IndexName: GSI1.indexName,
    KeyConditionExpression: '#pk = :pk',
    ExpressionAttributeNames: { '#pk': GSI1.partitionKey },
    ExpressionAttributeValues: { ':pk': apiKeyAccountIndexKey(account, '').gsi1pk },
  });
  return items.map((item) => ({ keyHash: apiKeyHashOfPartition(item.pk as string), record: toRecord(item) }));
}

function toRecord(item: Item): ApiKeyRecord {
  const { keyId, account, name, createdAt, revokedAt, lastUsedAt, usageIdentifier, apiGatewayKeyId, usagePlan } = item as unknown as ApiKeyRecord;
  return { keyId, account, name, createdAt, revokedAt, lastUsedAt, usageIdentifier, apiGatewayKeyId, usagePlan };
}
