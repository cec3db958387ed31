import { APIGatewayClient } from '@aws-sdk/client-api-gateway';
import { pageTokenKey } from '../config/page-token-key';
import { runtimeConfig } from '../config/runtime';
import type { UsagePlanName } from '../config/stages';
import { Conflict, Forbidden, NotFound, ServiceUnavailable, Unauthorized } from '../errors';
import { accountKeyCount, countNewApiKey } from '../limits/api-keys';
import { countApiKeyCreation } from '../limits/call-rates';
import { pageTokens } from '../page-token';
import type { ApiKey, ApiKeyList, CreateApiKeyBody, CreatedApiKey, ListApiKeysQuery } from '../schemas/api-keys';
import { getApiKeyItem, queryAccountApiKeyPage, type AccountKeyCount, type ApiKeyPagePosition } from '../store/api-keys';
import { findAccountKey, hashApiKey, keyInForce, type ApiKeyRecord, type StoredKey } from './api-keys';
import { createKeyWithGatewayKey, usagePlanIdNamed, type UsagePlanPlacement } from './gateway-keys';
import { finishRevocationsUnderWay, mayRevoke, revokeKeyTree } from './key-revocation';

/**
 * The API's key operations: an account's keys listed, made and revoked by a caller holding one of
 * them (`callerKeyId`, the key the authorizer accepted). Creating and revoking first read the calling
 * key as it is now, not as the authorizer's cache last saw it: a key revoked a moment ago (or made by
 * one) manages no keys. A key records the key that made it, and may revoke only itself and the keys it
 * made, directly or not (lib/keys/key-revocation.ts). On AWS a key made here gets its API Gateway key
 * under the calling key's usage plan, as the keys CLI's do; locally there is no API Gateway.
 */

const toApiKey = (record: ApiKeyRecord, callerKeyId: string | undefined): ApiKey => ({
  keyId: record.keyId,
  name: record.name,
  createdAt: Date.parse(record.createdAt),
  lastUsedAt: record.lastUsedAt === undefined ? undefined : Date.parse(record.lastUsedAt),
  revokedAt: record.revokedAt === undefined ? undefined : Date.parse(record.revokedAt),
  current: record.keyId === callerKeyId,
  createdBy: record.createdBy,
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

/**
 * The calling key as it is now, with the account's count as read to find it: refused (401, as any
 * refused key) when it, or a key it descends from, has been revoked since the authorizer accepted it,
 * or is being revoked. Changes nothing but what an account made before the count or the keys' id items
 * gets once: what checks a caller before changing the account's security (the shared secret) reads no
 * more than this.
 */
export async function callerAsItIsNow(account: string, callerKeyId: string | undefined): Promise<{ caller: StoredKey; count: AccountKeyCount }> {
  return callerIn(account, callerKeyId, await accountKeyCount(account));
}

async function callerIn(account: string, callerKeyId: string | undefined, count: AccountKeyCount): Promise<{ caller: StoredKey; count: AccountKeyCount }> {
  const caller = callerKeyId === undefined ? undefined : await findAccountKey(account, callerKeyId, count);
  if (!caller || !(await keyInForce(caller, count.revocationsUnderWay, { consistent: true }))) throw new Unauthorized();
  return { caller, count };
}

/** Whether the key read a moment ago still works, read again. */
async function stillInForce(account: string, key: StoredKey): Promise<boolean> {
  const record = await getApiKeyItem(key.keyHash, { consistent: true });
  return record !== undefined && keyInForce({ keyHash: key.keyHash, record }, (await accountKeyCount(account)).revocationsUnderWay, { consistent: true });
}

/**
 * The calling key of a key operation as it is now (callerAsItIsNow), after the account's revocations
 * cut off earlier are finished. A key that works but is not counted (a revocation cut off between its
 * two writes, a key made by an earlier version) is counted again, whatever the limit.
 */
async function callingKey(
  account: string,
  callerKeyId: string | undefined,
  apiGateway?: APIGatewayClient,
): Promise<{ caller: StoredKey; count: AccountKeyCount; finishedRevocations: string[] }> {
  if (callerKeyId === undefined) throw new Unauthorized();
  let count = await accountKeyCount(account);
  const finishedRevocations = count.revocationsUnderWay;
  if (finishedRevocations.length > 0) {
    await withGatewayThrottling(() => finishRevocationsUnderWay(account, finishedRevocations, apiGateway));
    count = await accountKeyCount(account);
  }
  const { caller } = await callerIn(account, callerKeyId, count);
  if (!count.keys[caller.record.keyId]) await countNewApiKey(account, { keyId: caller.record.keyId, keyHash: caller.keyHash }, { limited: false });
  return { caller, count, finishedRevocations };
}

export async function createAccountApiKey(
  account: string,
  callerKeyId: string | undefined,
  { name }: CreateApiKeyBody = {},
  apiGateway = new APIGatewayClient({}),
): Promise<CreatedApiKey> {
  const { caller } = await callingKey(account, callerKeyId, apiGateway);
  await countApiKeyCreation(account);
  const placement = await usagePlanPlacement(caller.record.usagePlan, apiGateway);
  const { key, record } = await withGatewayThrottling(() => createKeyWithGatewayKey(account, placement, apiGateway, { limited: true, name, creator: caller }));
  if (!(await stillInForce(account, caller))) {
    // Revoked while this key was made: its revocation may have read the keys it made before this one.
    await withGatewayThrottling(() => revokeKeyTree(account, { keyHash: hashApiKey(key), record }, { keepLast: false, apiGateway }));
    throw new Unauthorized();
  }
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
 * Revokes the account's key `keyId`, the calling key itself or a key it made (directly or not), with
 * every key it made, then deletes their API Gateway keys on AWS. A key already revoked keeps its first
 * revocation time, and what an earlier revocation left is done. Never the account's last keys that are
 * not revoked: the keys stop being counted, under that condition, before they are marked revoked.
 */
export async function revokeAccountApiKey(account: string, callerKeyId: string | undefined, keyId: string, apiGateway?: APIGatewayClient): Promise<ApiKey> {
  const { caller, count, finishedRevocations } = await callingKey(account, callerKeyId, apiGateway);
  const target = keyId === caller.record.keyId ? caller : await findAccountKey(account, keyId, count);
  if (!target) throw keyNotFound(keyId);
  if (!mayRevoke(caller, target)) {
    throw new Forbidden(
      `API key ${caller.record.keyId} may revoke only itself and the keys made with it (directly or through keys they made); ${keyId} is not one of them: revoke it with a key it was made with, or the operator's keys CLI`,
    );
  }
  // Its revocation, cut off earlier, was just finished.
  if (finishedRevocations.includes(target.keyHash)) return toApiKey(target.record, callerKeyId);
  const revocation = await withGatewayThrottling(() => revokeKeyTree(account, target, { keepLast: true, apiGateway }));
  if (revocation === 'last') {
    throw new Conflict(
      `API key ${keyId} and the keys made with it are the account's last keys that are not revoked: create another first (POST /v1/apiKeys with a key outside them, or the operator's keys CLI), then revoke this one`,
    );
  }
  if (!revocation) throw keyNotFound(keyId);
  return toApiKey(revocation.record, callerKeyId);
}
