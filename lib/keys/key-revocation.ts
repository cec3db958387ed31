import type { APIGatewayClient } from '@aws-sdk/client-api-gateway';
import { startTreeRevocation, uncountApiKey, type CountableKey } from '../limits/api-keys';
import { logger } from '../logger';
import { endKeyRevocation, getAccountKeyCount, getApiKeyItem, markApiKeyRevoked, markApiKeyRevoking, queryApiKeysMadeBy, unmarkApiKeyRevoking, type ApiKeyRecord } from '../store/api-keys';
import { findAccountKey, hashApiKey, type StoredKey } from './api-keys';
import { deleteGatewayKeyOf } from './gateway-keys';

/**
 * Revoking a key revokes the keys it made, and the keys those made, in one operation that whoever comes
 * next completes after a crash (docs/api-keys.md). The root is first marked as being revoked (it
 * authorizes nothing from then on, a mark taken back only when the revocation is refused as the
 * account's last keys); the revocation is then recorded on the account's item, in the write that
 * stops counting the tree's keys; then the root is marked revoked, then each key
 * it made, then those each made, each before its own are read; last, the record is dropped. Every step
 * is a single-item write that can be made twice: a crash leaves the record, and the next key operation
 * on the account (or the keys CLI) finishes the revocation. A key works only while none of the keys it
 * descends from is revoked or being revoked (keyInForce), so nothing the root made works from its first
 * write on.
 */

export interface Revocation {
  record: ApiKeyRecord;
  /** The key was revoked before this call; `record.revokedAt` is that first time. */
  alreadyRevoked: boolean;
}

export interface TreeRevocation extends Revocation {
  /** The root's API Gateway key (on AWS): deleted, already gone (false), or none (undefined). */
  gatewayKeyDeleted: boolean | undefined;
  /** How many keys it made (directly or not) this call revoked with it. */
  descendantsRevoked: number;
}

/** A key may revoke itself and the keys it made, directly or not; the operator's keys CLI any key. */
export const mayRevoke = (caller: StoredKey, target: StoredKey) =>
  target.keyHash === caller.keyHash || (target.record.ancestorKeyHashes ?? []).includes(caller.keyHash);

/**
 * Revokes `root` and every key it made, directly or not. With `keepLast` (the API), 'last' instead when
 * those are all the account's keys that are not revoked, and nothing is changed. Undefined when the
 * root has no item.
 */
export async function revokeKeyTree(
  account: string,
  root: StoredKey,
  { keepLast, apiGateway }: { keepLast: boolean; apiGateway?: APIGatewayClient },
): Promise<TreeRevocation | 'last' | undefined> {
  // Before the account records the revocation: cut off between the two writes, the root already authorizes nothing.
  if (!(await markApiKeyRevoking(root.keyHash, new Date().toISOString()))) return undefined;
  const tree = [{ keyId: root.record.keyId, keyHash: root.keyHash }, ...(await keysMadeUnder(account, root.record.keyId))];
  if ((await startTreeRevocation(account, root.keyHash, tree, { keepLast })) === 'last') {
    await unmarkApiKeyRevoking(root.keyHash);
    return 'last';
  }
  return finishKeyRevocation(account, root.keyHash, apiGateway);
}

/** Finishes the revocations recorded on the account and not finished (cut off by a crash or a failure). */
export async function finishRevocationsUnderWay(account: string, revocationsUnderWay: string[], apiGateway?: APIGatewayClient): Promise<void> {
  for (const rootHash of revocationsUnderWay) await finishKeyRevocation(account, rootHash, apiGateway);
}

/**
 * Visits the keys that the key `keyId` made, then those each of them made, and so on: the keys a visit
 * answers false for are not descended into. Each generation is read after the one before was visited.
 */
async function walkKeysMadeUnder(account: string, keyId: string, visit: (key: CountableKey) => Promise<boolean>): Promise<void> {
  for (let creators = [keyId]; creators.length > 0; ) {
    const made = (await Promise.all(creators.map((creator) => queryApiKeysMadeBy(account, creator)))).flat();
    creators = [];
    for (const key of made) if (await visit(key)) creators.push(key.keyId);
  }
}

/** The keys that the key `keyId` made, directly or not, as the store holds them now. */
async function keysMadeUnder(account: string, keyId: string): Promise<CountableKey[]> {
  const found: CountableKey[] = [];
  await walkKeysMadeUnder(account, keyId, async (key) => found.push(key) > 0);
  return found;
}

/**
 * Marks the root revoked, then each key under it, each before the keys it made are read (a key made
 * meanwhile is either read here or refused by its maker, which reads its own key again once it is
 * written); each revoked key's API Gateway key is deleted, and a key made after the revocation started
 * stops being counted. Then the revocation's record goes.
 */
async function finishKeyRevocation(account: string, rootHash: string, apiGateway: APIGatewayClient | undefined): Promise<TreeRevocation | undefined> {
  const root = await revokeStoredKey(rootHash);
  const gatewayKeyDeleted = root && (await deleteRevokedGatewayKey(root, apiGateway));
  let descendantsRevoked = 0;
  if (root) {
    await walkKeysMadeUnder(account, root.record.keyId, async (key) => {
      const revocation = await revokeStoredKey(key.keyHash);
      // A creation cut off before the key's item was written: there is no key.
      if (!revocation) return false;
      await uncountApiKey(account, key);
      await deleteRevokedGatewayKey(revocation, apiGateway);
      if (!revocation.alreadyRevoked) descendantsRevoked += 1;
      return true;
    });
  }
  await endKeyRevocation(account, rootHash);
  return root && { ...root, gatewayKeyDeleted, descendantsRevoked };
}

/** Marks the key revoked, once: a key already revoked keeps its first revocation time. Undefined for a key with no item. */
async function revokeStoredKey(keyHash: string): Promise<Revocation | undefined> {
  const now = new Date().toISOString();
  const before = await markApiKeyRevoked(keyHash, now);
  if (!before) return undefined;
  const alreadyRevoked = before.revokedAt !== undefined;
  return { record: alreadyRevoked ? before : { ...before, revokedAt: now }, alreadyRevoked };
}

/**
 * Deletes a revoked key's API Gateway key (on AWS), also when an earlier revocation left it. One made
 * before keys were tagged with their stage, which the API's functions may not delete, authorizes nothing
 * once its key is revoked: it is left for the operator's keys CLI (docs/api-keys.md).
 */
async function deleteRevokedGatewayKey(revocation: Revocation, apiGateway: APIGatewayClient | undefined): Promise<boolean | undefined> {
  try {
    return await deleteGatewayKeyOf(revocation, apiGateway);
  } catch (error) {
    if ((error as Error).name !== 'AccessDeniedException') throw error;
    const { account, keyId, apiGatewayKeyId } = revocation.record;
    logger.warn('the API Gateway key of a revoked API key is not tagged with this stage: left for the keys CLI', { account, keyId, apiGatewayKeyId });
    return undefined;
  }
}

/**
 * The operator's revocation (the keys CLI), of the key itself: the key and every key it made, whatever
 * the account's other keys; revocations of the account cut off earlier are finished first. Undefined
 * for an unknown key.
 */
export async function revokeApiKey(key: string, apiGateway?: APIGatewayClient): Promise<TreeRevocation | undefined> {
  const keyHash = hashApiKey(key);
  const record = await getApiKeyItem(keyHash, { consistent: true });
  if (!record) return undefined;
  return revokeOperatorsKey(record.account, { keyHash, record }, apiGateway);
}

/** As revokeApiKey, for the key the account's listing shows under `keyId`: no need to hold the key. */
export async function revokeApiKeyById(account: string, keyId: string, apiGateway?: APIGatewayClient): Promise<TreeRevocation | undefined> {
  const found = await findAccountKey(account, keyId, await getAccountKeyCount(account));
  return found && revokeOperatorsKey(account, found, apiGateway);
}

/** The key's own revocation, if one was cut off, is finished by revoking it again, which says what it did. */
async function revokeOperatorsKey(account: string, key: StoredKey, apiGateway: APIGatewayClient | undefined): Promise<TreeRevocation | undefined> {
  const underWay = (await getAccountKeyCount(account))?.revocationsUnderWay ?? [];
  await finishRevocationsUnderWay(account, underWay.filter((rootHash) => rootHash !== key.keyHash), apiGateway);
  return (await revokeKeyTree(account, key, { keepLast: false, apiGateway })) as TreeRevocation | undefined;
}
