import { createHash, randomBytes } from 'node:crypto';
import { tableName } from '../store/client';
import { unlessConditionFails } from '../store/conditional-write';
import { getItem, putItem, queryAllItems, updateItem, type Item } from '../store/items';
import { accountKey, apiKeyAccountIndexKey, apiKeyKey, GSI1 } from '../store/table';

/**
 * API keys: 32 random bytes, shown once at creation; the table holds only their SHA-256. A fast
 * hash is enough here: the key is high-entropy, so there is nothing to guess from the hash.
 */
const KEY_PREFIX = 'whk_';
const KEY_BYTES = 32;

export const ACCOUNT_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export interface ApiKeyRecord {
  /** First 12 hex digits of the key's hash: names a key in listings without revealing it. */
  keyId: string;
  account: string;
  createdAt: string;
  revokedAt?: string;
  /** On AWS: the API Gateway API key (same value) that puts the caller under a usage plan. */
  apiGatewayKeyId?: string;
  usagePlan?: string;
}

export interface ResolvedApiKey {
  account: string;
  keyId: string;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

const keyIdOf = (keyHash: string) => keyHash.slice(0, 12);

/** The id a key is listed under: a prefix of its hash, safe to show and to name things after. */
export const apiKeyId = (key: string) => keyIdOf(hashApiKey(key));

async function createAccountIfMissing(account: string, now: string): Promise<void> {
  await unlessConditionFails(
    putItem({
      TableName: tableName(),
      Item: { ...accountKey(account), account, createdAt: now },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(KEY_BYTES).toString('base64url');
}

export function assertAccountName(account: string): void {
  if (!ACCOUNT_NAME_PATTERN.test(account)) {
    throw new Error(`Invalid account name '${account}': use 1-63 lower-case letters, digits, '-' or '_'`);
  }
}

/**
 * Stores a key for the account (and the account, if new). The key itself is returned once, never
 * stored. `gateway` records the API Gateway key made for it on AWS, in the same write.
 */
export async function createApiKey(
  account: string,
  options: { key?: string; gateway?: { apiGatewayKeyId: string; usagePlan: string } } = {},
): Promise<{ key: string; record: ApiKeyRecord }> {
  assertAccountName(account);
  const createdAt = new Date().toISOString();
  await createAccountIfMissing(account, createdAt);
  const key = options.key ?? generateApiKey();
  const keyHash = hashApiKey(key);
  const record: ApiKeyRecord = { keyId: keyIdOf(keyHash), account, createdAt, ...options.gateway };
  await putItem({
    TableName: tableName(),
    Item: { ...apiKeyKey(keyHash), ...apiKeyAccountIndexKey(account, createdAt), ...record },
    ConditionExpression: 'attribute_not_exists(pk)',
  });
  return { key, record };
}

/** The account a key belongs to, or undefined for a key that is unknown or revoked. */
export async function resolveApiKey(key: string): Promise<ResolvedApiKey | undefined> {
  const item = await getItem({ TableName: tableName(), Key: apiKeyKey(hashApiKey(key)) });
  if (!item || item.revokedAt) return undefined;
  return { account: item.account as string, keyId: item.keyId as string };
}

/**
 * Marks the key revoked (kept for the audit trail); a key already revoked keeps its first revocation
 * time. Undefined for an unknown key.
 */
export async function revokeApiKey(key: string): Promise<{ record: ApiKeyRecord; alreadyRevoked: boolean } | undefined> {
  const now = new Date().toISOString();
  const before = await unlessConditionFails(
    updateItem({
      TableName: tableName(),
      Key: apiKeyKey(hashApiKey(key)),
      UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :now)',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':now': now },
      ReturnValues: 'ALL_OLD',
    }),
  );
  if (!before) return undefined;
  const alreadyRevoked = before.revokedAt !== undefined;
  return { record: toRecord(alreadyRevoked ? before : { ...before, revokedAt: now }), alreadyRevoked };
}

export async function listApiKeys(account: string): Promise<ApiKeyRecord[]> {
  const { items } = await queryAllItems({
    TableName: tableName(),
    IndexName: GSI1.indexName,
    KeyConditionExpression: '#pk = :pk',
    ExpressionAttributeNames: { '#pk': GSI1.partitionKey },
    ExpressionAttributeValues: { ':pk': apiKeyAccountIndexKey(account, '').gsi1pk },
  });
  return items.map(toRecord);
}

function toRecord(item: Item): ApiKeyRecord {
  const { keyId, account, createdAt, revokedAt, apiGatewayKeyId, usagePlan } = item as unknown as ApiKeyRecord;
  return { keyId, account, createdAt, revokedAt, apiGatewayKeyId, usagePlan };
}
