/**
 * API keys not revoked per account: counted on the account's item (lib/store/api-keys.ts) before a
 * key's item is written, and no longer counted before a key is marked revoked, so that concurrent
 * creations never pass the limit and concurrent revocations never revoke the account's last key.
 */
import { runtimeConfig } from '../config/runtime';
import { BadRequest, ServiceUnavailable } from '../errors';
import {
  countAccountKey,
  getAccountKeyCount,
  getApiKeyItem,
  queryAccountApiKeys,
  revokedApiKeyHashes,
  startAccountKeyCount,
  startKeyRevocation,
  uncountAccountKey,
  type AccountKeyCount,
  type CountedApiKey,
} from '../store/api-keys';
import { ATTEMPTS, CREATION_GRACE_MS } from './account-limits';

/** A key as its account counts it: its id, and the hash its item is stored under. */
export interface CountableKey {
  keyId: string;
  keyHash: string;
}

const tooManyApiKeys = (count: number, limit: number) =>
  new BadRequest(
    `Too many API keys: the account has ${count} that are not revoked, its limit is ${limit} API keys per account; ` +
      'revoke one (DELETE /v1/apiKeys/{keyId}) to create another',
  );

/**
 * The account's count of keys not revoked. An account made before the count existed gets one,
 * started from its listing.
 */
export async function accountKeyCount(account: string): Promise<AccountKeyCount> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const count = await getAccountKeyCount(account);
    if (count) return count;
    const now = new Date().toISOString();
    const keys = await queryAccountApiKeys(account);
    const notRevoked = keys.filter(({ record }) => record.revokedAt === undefined);
    const counted = Object.fromEntries(notRevoked.map(({ keyHash, record }) => [record.keyId, { keyHash, countedAt: now }]));
    // Keys made before their id's item existed have none: an account with no key yet needs none made.
    await startAccountKeyCount(account, counted, now, { keyIdsIndexed: keys.length === 0 });
  }
  throw new ServiceUnavailable();
}

/**
 * Counts a new key before its item is written. With `limited` (the API), refuses it (400 naming
 * the limit) when the account counts its limit of keys, after dropping counts that no key backs;
 * without (the operator's keys CLI), counts it whatever the limit. False when a key with its id is
 * already counted (a 48-bit collision: make another key).
 */
export async function countNewApiKey(account: string, key: CountableKey, { limited }: { limited: boolean }): Promise<boolean> {
  const counted: CountedApiKey = { keyHash: key.keyHash, countedAt: new Date().toISOString() };
  let leftoversDropped = false;
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const limit = limited ? runtimeConfig().accountLimits.apiKeysPerAccount : undefined;
    if (await countAccountKey(account, key.keyId, counted, limit)) return true;
    const count = await accountKeyCount(account);
    if (count.keys[key.keyId]) return count.keys[key.keyId]!.keyHash === key.keyHash;
    if (limit === undefined || count.activeKeys < limit) continue; // started, or room freed meanwhile
    if (!leftoversDropped && (await dropLeftoverCounts(account, count)) > 0) {
      leftoversDropped = true;
      continue;
    }
    throw tooManyApiKeys(count.activeKeys, limit);
  }
  throw new ServiceUnavailable();
}

/**
 * Stops counting a key, whatever the account's other keys: a creation that failed before its item was
 * written, or a key of a tree being revoked made after the revocation's first write.
 */
export async function uncountApiKey(account: string, key: CountableKey): Promise<void> {
  await uncountAccountKey(account, key.keyId, key.keyHash, { keepOne: false });
}

/**
 * Starts the revocation of a tree of keys (the key stored under `rootHash` and the keys it made, as
 * read): records it on the account and stops counting the tree's keys the account counts, in one
 * write. With `keepLast` (the API), not when they are all the keys counted: then 'last'.
 */
export async function startTreeRevocation(account: string, rootHash: string, tree: CountableKey[], { keepLast }: { keepLast: boolean }): Promise<'started' | 'last'> {
  let leftoversDropped = false;
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const count = await accountKeyCount(account);
    const counted = tree.filter(({ keyId, keyHash }) => count.keys[keyId]?.keyHash === keyHash);
    if (await startKeyRevocation(account, rootHash, counted, { keepOne: keepLast })) return 'started';
    if (!keepLast || counted.length === 0) continue; // a key of the tree uncounted meanwhile
    const after = await accountKeyCount(account);
    if (counted.some(({ keyId, keyHash }) => after.keys[keyId]?.keyHash !== keyHash) || after.activeKeys > counted.length) continue;
    if (!leftoversDropped && (await dropLeftoverCounts(account, after)) > 0) {
      leftoversDropped = true;
      continue;
    }
    return 'last';
  }
  throw new ServiceUnavailable();
}

/**
 * Stops counting keys that no key item backs: counted long ago and never written (a creation cut off
 * between its two writes), revoked without being uncounted (a revocation by an earlier version), or
 * dead through a revoked key they descend from (made by it as its revocation was cut off, after the
 * revocation's walk had passed). Not a key only being revoked: its revocation may yet be refused.
 * Reads each counted key's item: at most the limit's worth, and only when a call would be refused.
 */
const revokedAncestry = async ({ ancestorKeyHashes = [] }: { ancestorKeyHashes?: string[] }) =>
  ancestorKeyHashes.length > 0 && (await revokedApiKeyHashes(ancestorKeyHashes, { consistent: true, onlyRevoked: true })).length > 0;

async function dropLeftoverCounts(account: string, count: AccountKeyCount): Promise<number> {
  const writtenBefore = new Date(Date.now() - CREATION_GRACE_MS).toISOString();
  let dropped = 0;
  for (const [keyId, { keyHash, countedAt }] of Object.entries(count.keys)) {
    const record = await getApiKeyItem(keyHash, { consistent: true });
    const leftover = record ? record.revokedAt !== undefined || (await revokedAncestry(record)) : countedAt < writtenBefore;
    if (leftover && (await uncountAccountKey(account, keyId, keyHash, { keepOne: false }))) dropped += 1;
  }
  return dropped;
}
