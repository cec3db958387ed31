import { tableName } from './client';
import { conditionHeld, unlessConditionFails } from './conditional-write';
import { readItems } from './batch';
import { getItem, putItem, queryAllItems, queryItems, queryUntilFull, updateItem, type Item } from './items';
import { accountKey, apiKeyAccountIndexKey, apiKeyHashOfPartition, apiKeyIdKey, apiKeyKey, apiKeyMadeByKey, apiKeysMadeByPartition, GSI1 } from './table';

/** An API key as the table holds it: never the key itself, only what is derived from or made beside it. */
export interface ApiKeyRecord {
  /** First 12 hex digits of the key's hash: names a key in listings without revealing it. */
  keyId: string;
  account: string;
  /** The caller's label for the key, given when it was made. */
  name?: string;
  createdAt: string;
  revokedAt?: string;
  /**
   * Set when a revocation of this key starts, before the account records it: from then the key
   * authorizes nothing, even should the revocation be cut off before it is recorded (lib/keys/key-revocation.ts).
   */
  revokingSince?: string;
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
  /** The id of the key that made it through the API; absent for the operator's keys (the keys CLI) and keys made before it was kept. */
  createdBy?: string;
  /**
   * The hashes of the keys it descends from, the first one made first, its maker last: it works only while
   * none of them is revoked (lib/keys/key-revocation.ts), and those keys may revoke it.
   */
  ancestorKeyHashes?: string[];
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
  /** The hashes of the keys whose revocation (with the keys they made) was started and not yet finished. */
  revocationsUnderWay: string[];
  /** Whether every key of the account has its id's item (apiKeyIdKey): false for an account made before those items. */
  keyIdsIndexed: boolean;
}

export async function getAccountKeyCount(account: string): Promise<AccountKeyCount | undefined> {
  const item = await getItem({
    TableName: tableName(),
    Key: accountKey(account),
    ConsistentRead: true,
    ProjectionExpression: 'activeKeys, activeKeyHashes, keyRevocations, keyIdsIndexed',
  });
  if (item?.activeKeys === undefined) return undefined;
  return {
    activeKeys: item.activeKeys as number,
    keys: (item.activeKeyHashes ?? {}) as Record<string, CountedApiKey>,
    revocationsUnderWay: [...((item.keyRevocations as Set<string> | undefined) ?? [])],
    keyIdsIndexed: item.keyIdsIndexed === true,
  };
}

/**
 * Starts the account's count with `keys` (the account item is made if missing), unless it has one;
 * with `keyIdsIndexed`, every key of the account has its id's item already. Whether it started it.
 */
export async function startAccountKeyCount(account: string, keys: Record<string, CountedApiKey>, now: string, { keyIdsIndexed }: { keyIdsIndexed: boolean }): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: accountKey(account),
      UpdateExpression:
        'SET activeKeys = :count, activeKeyHashes = :keys, keyIdsIndexed = :indexed, account = if_not_exists(account, :account), createdAt = if_not_exists(createdAt, :now)',
      ConditionExpression: 'attribute_not_exists(activeKeys)',
      ExpressionAttributeValues: { ':count': Object.keys(keys).length, ':keys': keys, ':indexed': keyIdsIndexed, ':account': account, ':now': now },
    }),
  );
}

/** Every key of the account has its id's item now; kept on its count (nothing is marked on an account without one). */
export async function markKeyIdsIndexed(account: string): Promise<void> {
  await unlessConditionFails(
    updateItem({
      TableName: tableName(),
      Key: accountKey(account),
      UpdateExpression: 'SET keyIdsIndexed = :true',
      ConditionExpression: 'attribute_exists(activeKeys)',
      ExpressionAttributeValues: { ':true': true },
    }),
  );
}

/**
 * Starts the revocation of the key stored under `rootHash` (and the keys it made): records it on the
 * account's item and stops counting `keys` (those of the tree the account counts) in the same write,
 * unless one of them is no longer counted under its hash or (with `keepOne`) they are all the keys
 * counted. Whether it started it.
 */
export async function startKeyRevocation(account: string, rootHash: string, keys: { keyId: string; keyHash: string }[], { keepOne }: { keepOne: boolean }): Promise<boolean> {
  const names = Object.fromEntries(keys.map(({ keyId }, index) => [`#k${index}`, keyId]));
  const hashes = Object.fromEntries(keys.map(({ keyHash }, index) => [`:h${index}`, keyHash]));
  const counted = keys.map((_, index) => `activeKeyHashes.#k${index}.keyHash = :h${index}`);
  const uncounted = keys.length === 0;
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: accountKey(account),
      UpdateExpression: uncounted
        ? 'ADD keyRevocations :root'
        : `REMOVE ${keys.map((_, index) => `activeKeyHashes.#k${index}`).join(', ')} ADD keyRevocations :root, activeKeys :minus`,
      ConditionExpression: ['attribute_exists(activeKeys)', ...counted, ...(keepOne && !uncounted ? ['activeKeys > :n'] : [])].join(' AND '),
      ...(uncounted ? {} : { ExpressionAttributeNames: names }),
      ExpressionAttributeValues: {
        ':root': new Set([rootHash]),
        ...hashes,
        ...(uncounted ? {} : { ':minus': -keys.length }),
        ...(keepOne && !uncounted ? { ':n': keys.length } : {}),
      },
    }),
  );
}

/** The revocation of the key stored under `rootHash` is finished: every key of its tree is marked revoked. */
export async function endKeyRevocation(account: string, rootHash: string): Promise<void> {
  await updateItem({
    TableName: tableName(),
    Key: accountKey(account),
    UpdateExpression: 'DELETE keyRevocations :root',
    ExpressionAttributeValues: { ':root': new Set([rootHash]) },
  });
}

/**
 * Names the hash of the account's key `keyId`, unless another key's hash is named under that id (a
 * 48-bit collision with a revoked key). Whether it names this one.
 */
export async function putApiKeyIdItem(account: string, keyId: string, keyHash: string): Promise<boolean> {
  return conditionHeld(
    putItem({
      TableName: tableName(),
      Item: { ...apiKeyIdKey(account, keyId), keyHash },
      ConditionExpression: 'attribute_not_exists(pk) OR keyHash = :keyHash',
      ExpressionAttributeValues: { ':keyHash': keyHash },
    }),
  );
}

/** The hash of the account's key `keyId`, from its id's item; undefined when it has none. */
export async function getApiKeyHashById(account: string, keyId: string): Promise<string | undefined> {
  const item = await getItem({ TableName: tableName(), Key: apiKeyIdKey(account, keyId), ConsistentRead: true });
  return item?.keyHash as string | undefined;
}

/** Records that the account's key `creatorKeyId` made the key `keyId`, before that key's item is written. */
export async function putApiKeyMadeBy(account: string, creatorKeyId: string, keyId: string, keyHash: string): Promise<void> {
  await putItem({ TableName: tableName(), Item: { ...apiKeyMadeByKey(account, creatorKeyId, keyId), keyId, keyHash } });
}

/** The keys that the account's key `creatorKeyId` made, each with its hash (a consistent read). */
export async function queryApiKeysMadeBy(account: string, creatorKeyId: string): Promise<{ keyId: string; keyHash: string }[]> {
  const { items } = await queryAllItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': apiKeysMadeByPartition(account, creatorKeyId) },
    ConsistentRead: true,
  });
  return items.map((item) => ({ keyId: item.keyId as string, keyHash: item.keyHash as string }));
}

/**
 * Of the keys stored under `keyHashes`, the hashes of those revoked or with no item, and unless
 * `onlyRevoked` those being revoked (a mark a refused revocation takes back).
 */
export async function revokedApiKeyHashes(keyHashes: string[], { consistent, onlyRevoked = false }: { consistent: boolean; onlyRevoked?: boolean }): Promise<string[]> {
  const { items } = await readItems(keyHashes.map(apiKeyKey), ['pk', 'revokedAt', 'revokingSince'], { eventuallyConsistent: !consistent });
  const inForce = new Set(
    items.filter((item) => item.revokedAt === undefined && (onlyRevoked || item.revokingSince === undefined)).map((item) => apiKeyHashOfPartition(item.pk as string)),
  );
  return keyHashes.filter((keyHash) => !inForce.has(keyHash));
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

/** Marks a key whose revocation starts: it authorizes nothing from now on. False when there is no key with that hash. */
export async function markApiKeyRevoking(keyHash: string, now: string): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: apiKeyKey(keyHash),
      UpdateExpression: 'SET revokingSince = if_not_exists(revokingSince, :now)',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':now': now },
    }),
  );
}

/** Takes back the mark of a revocation that was refused (it would have left the account no key). */
export async function unmarkApiKeyRevoking(keyHash: string): Promise<void> {
  await updateItem({ TableName: tableName(), Key: apiKeyKey(keyHash), UpdateExpression: 'REMOVE revokingSince', ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(revokedAt)' }).catch(
    (error: Error) => {
      if (error.name !== 'ConditionalCheckFailedException') throw error;
    },
  );
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
      UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :now) REMOVE revokingSince',
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
  const { keyId, account, name, createdAt, revokedAt, revokingSince, lastUsedAt, usageIdentifier, apiGatewayKeyId, usagePlan, createdBy, ancestorKeyHashes } = item as unknown as ApiKeyRecord;
  return { keyId, account, name, createdAt, revokedAt, revokingSince, lastUsedAt, usageIdentifier, apiGatewayKeyId, usagePlan, createdBy, ancestorKeyHashes };
}
