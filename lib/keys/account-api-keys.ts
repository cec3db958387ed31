import { APIGatewayClient } from '@aws-sdk/client-api-gateway';
import { pageTokenKey } from '../config/page-token-key';
import { runtimeConfig } from '../config/runtime';
import type { UsagePlanName } from '../config/stages';
import { Conflict, NotFound, ServiceUnavailable, Unauthorized } from '../errors';
import { accountKeyCount, countNewApiKey, uncountApiKey } from '../limits/api-keys';
import { countApiKeyCreation } from '../limits/call-rates';
import { logger } from '../logger';
import { pageTokens } from '../page-token';
import type { ApiKey, ApiKeyList, CreateApiKeyBody, CreatedApiKey, ListApiKeysQuery } from '../schemas/api-keys';
import { getApiKeyItem, queryAccountApiKeyPage, queryAccountApiKeys, type AccountKeyCount, type ApiKeyPagePosition } from '../store/api-keys';
import { keyWithId, revokeStoredKey, type ApiKeyRecord, type Revocation } from './api-keys';
import { createKeyWithGatewayKey, deleteGatewayKeyOf, usagePlanIdNamed, type UsagePlanPlacement } from './gateway-keys';

/**
 * The API's key operations: an account's keys listed, made and revoked by a caller holding one of
 * them (`callerKeyId`, the key the authorizer accepted). Creating and revoking first read the calling
 * key as it is now, not as the authorizer's cache last saw it: a key revoked a moment ago manages no
 * keys. On AWS a key made here gets its API Gateway key under the calling key's usage plan, as the
 * keys CLI's do; locally there is no API Gateway.
 */

const toApiKey = (record: ApiKeyRecord, callerKeyId: string | undefined): ApiKey => ({
  keyId: record.keyId,
  name: record.name,
  createdAt: Date.parse(record.createdAt),
  lastUsedAt: record.lastUsedAt === undefined ? undefined : Date.parse(record.lastUsedAt),
  revokedAt: record.revokedAt === undefined ? undefined : Date.parse(record.revokedAt),
  current: record.keyId === callerKeyId,
});

// Not "of another account": whether a key id exists elsewhere is not the caller's to learn.
const keyNotFound = (keyId: string) => new NotFound(`API key ${keyId} not found`);

/** A page token's position (lib/page-token.ts): the page's last key, as `<createdAt> <keyId>`. */
const pagePosition = (record: ApiKeyRecord) => `${record.createdAt} ${record.keyId}`;
const positionOf = (position: string): ApiKeyPagePosition => {
  const [createdAt = '', keyId = ''] = position.split(' ');
  return { createdAt, keyId };
};

export async function listAccountApiKeys(account: string, callerKeyId: string | undefined, { pageSize, pageToken }: ListApiKeysQuery): Promise<ApiKeyList> {
  const key = await pageTokenKey();
  const after = pageToken === undefined ? undefined : positionOf(pageTokens.apiKeys.decode(key, { account }, pageToken));
  const { records, more } = await queryAccountApiKeyPage(account, pageSize, after);
  const last = records.at(-1);
  return {
    apiKeys: records.map((record) => toApiKey(record, callerKeyId)),
    nextPageToken: more && last ? pageTokens.apiKeys.encode(key, { account }, pagePosition(last)) : undefined,
  };
}

/** A key of the account as the store holds it now: its item and the hash it is stored under. */
interface StoredKey {
  keyHash: string;
  record: ApiKeyRecord;
}

/**
 * The account's key `keyId` as it is now (a consistent read of its item), found by the account's
 * count, or for a key it does not count (revoked, or left uncounted by a cut-off revocation) by the
 * account's listing. Undefined when the account has no key with that id.
 */
async function findAccountKey(account: string, keyId: string, count: AccountKeyCount): Promise<StoredKey | undefined> {
  const keyHash = count.keys[keyId]?.keyHash ?? keyWithId(account, await queryAccountApiKeys(account), keyId)?.keyHash;
  const record = keyHash === undefined ? undefined : await getApiKeyItem(keyHash, { consistent: true });
  return record && record.account === account ? { keyHash: keyHash!, record } : undefined;
}

/**
 * The calling key as it is now, refused (401, as any refused key) when it has been revoked since the
 * authorizer accepted it, with the account's count as read to find it. A key that works but is not
 * counted (a revocation cut off between its two writes, a key made by an earlier version) is counted
 * again, whatever the limit.
 */
async function callingKey(account: string, callerKeyId: string | undefined): Promise<{ caller: StoredKey; count: AccountKeyCount }> {
  if (callerKeyId === undefined) throw new Unauthorized();
  const count = await accountKeyCount(account);
  const caller = await findAccountKey(account, callerKeyId, count);
  if (!caller || caller.record.revokedAt !== undefined) throw new Unauthorized();
  if (!count.keys[caller.record.keyId]) await countNewApiKey(account, { keyId: caller.record.keyId, keyHash: caller.keyHash }, { limited: false });
  return { caller, count };
}

export async function createAccountApiKey(
  account: string,
  callerKeyId: string | undefined,
  { name }: CreateApiKeyBody = {},
  apiGateway = new APIGatewayClient({}),
): Promise<CreatedApiKey> {
  const { caller } = await callingKey(account, callerKeyId);
  await countApiKeyCreation(account);
  const placement = await usagePlanPlacement(caller.record.usagePlan, apiGateway);
  const { key, record } = await withGatewayThrottling(() => createKeyWithGatewayKey(account, placement, apiGateway, { limited: true, name }));
  return { ...toApiKey(record, callerKeyId), key };
}

/** On AWS, the calling key's plan (the stage's default for a key made without one); locally none. */
async function usagePlanPlacement(callerPlan: string | undefined, apiGateway: APIGatewayClient): Promise<UsagePlanPlacement | undefined> {
  const { usagePlanNames, stage } = runtimeConfig();
  if (!usagePlanNames) return undefined;
  const plan = (callerPlan ?? stage.defaultUsagePlan) as UsagePlanName;
  const name = usagePlanNames[plan];
  if (!name) {
    throw new Conflict(
      `The calling key's usage plan '${plan}' is no longer offered on this stage: a key made with it would have no plan; ask the operator for a key on a current plan`,
    );
  }
  return { plan, usagePlanId: await withGatewayThrottling(() => usagePlanIdNamed(name, apiGateway)), stage: stage.name };
}

/** API Gateway's own throttling of our calls (its control plane allows a few a second): a 503 to retry, not a 500. */
const GATEWAY_THROTTLING = new Set(['TooManyRequestsException', 'LimitExceededException']);
const GATEWAY_RETRY_SECONDS = 5;

async function withGatewayThrottling<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!GATEWAY_THROTTLING.has((error as Error).name)) throw error;
    const retryAfter = Number((error as { retryAfterSeconds?: string }).retryAfterSeconds);
    throw new ServiceUnavailable(Number.isInteger(retryAfter) && retryAfter > 0 ? retryAfter : GATEWAY_RETRY_SECONDS);
  }
}

/**
 * Revokes the account's key `keyId` (the calling key included), then deletes its API Gateway key
 * on AWS. A key already revoked keeps its first revocation time, and its API Gateway key is deleted
 * if an earlier revocation left it. Never the account's last key that is not revoked: the key stops
 * being counted, under that condition, before it is marked revoked.
 */
export async function revokeAccountApiKey(account: string, callerKeyId: string | undefined, keyId: string, apiGateway?: APIGatewayClient): Promise<ApiKey> {
  const { caller, count } = await callingKey(account, callerKeyId);
  const target = keyId === caller.record.keyId ? caller : await findAccountKey(account, keyId, count);
  if (!target) throw keyNotFound(keyId);
  if ((await uncountApiKey(account, { keyId, keyHash: target.keyHash }, { keepLast: true })) === 'last') {
    throw new Conflict(
      `API key ${keyId} is the account's last key that is not revoked: create another first (POST /v1/apiKeys), then revoke this one`,
    );
  }
  const revocation: Revocation | undefined = await revokeStoredKey(target.keyHash);
  if (!revocation) throw keyNotFound(keyId);
  try {
    await withGatewayThrottling(() => deleteGatewayKeyOf(revocation, apiGateway));
  } catch (error) {
    // An API Gateway key made before keys were tagged with their stage, which this function may not delete:
    // it authorizes nothing once its key is revoked; the operator's keys CLI deletes it (docs/api-keys.md).
    if ((error as Error).name !== 'AccessDeniedException') throw error;
    logger.warn('the API Gateway key of a revoked API key is not tagged with this stage: left for the keys CLI', {
      account,
      keyId,
      apiGatewayKeyId: revocation.record.apiGatewayKeyId,
    });
  }
  return toApiKey(revocation.record, callerKeyId);
}
