import { tableName } from './client';
import { unlessConditionFails } from './conditional-write';
import { getItem, putItem, queryAllItems, updateItem, type Item } from './items';
import { accountKey, apiKeyAccountIndexKey, apiKeyHashOfPartition, apiKeyKey, GSI1 } from './table';

/** An API key as the table holds it: never the key itself, only what is derived from or made beside it. */
export interface ApiKeyRecord {
  /** First 12 hex digits of the key's hash: names a key in listings without revealing it. */
  keyId: string;
  account: string;
  createdAt: string;
  revokedAt?: string;
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

/** The account's item, written with its first key. */
export async function putAccountIfMissing(account: string, createdAt: string): Promise<void> {
  await unlessConditionFails(
    putItem({
      TableName: tableName(),
      Item: { ...accountKey(account), account, createdAt },
      ConditionExpression: 'attribute_not_exists(pk)',
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

export async function getApiKeyItem(keyHash: string): Promise<ApiKeyRecord | undefined> {
  const item = await getItem({ TableName: tableName(), Key: apiKeyKey(keyHash) });
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
  const { keyId, account, createdAt, revokedAt, usageIdentifier, apiGatewayKeyId, usagePlan } = item as unknown as ApiKeyRecord;
  return { keyId, account, createdAt, revokedAt, usageIdentifier, apiGatewayKeyId, usagePlan };
}
