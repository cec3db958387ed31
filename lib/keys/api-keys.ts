import { createHash, randomBytes } from 'node:crypto';
import { Conflict } from '../errors';
import { countNewApiKey, uncountApiKey } from '../limits/api-keys';
import { logger } from '../logger';
import {
  getApiKeyHashById,
  getApiKeyItem,
  markApiKeyUsed,
  markKeyIdsIndexed,
  putApiKeyIdItem,
  putApiKeyItem,
  putApiKeyMadeBy,
  queryAccountApiKeys,
  revokedApiKeyHashes,
  type AccountKeyCount,
  type ApiKeyRecord,
} from '../store/api-keys';

export type { ApiKeyRecord } from '../store/api-keys';

/**
 * API keys: 32 random bytes, shown once at creation; the table holds only their SHA-256. A fast
 * hash is enough here: the key is high-entropy, so there is nothing to guess from the hash.
 */
const KEY_PREFIX = 'whk_';
const KEY_BYTES = 32;
/** What every key looks like: anything else is refused without reading the table. */
const API_KEY_PATTERN = /^whk_[A-Za-z0-9_-]{43}$/;
/** What `keys list` shows and `keys revoke` takes. */
export const API_KEY_ID_PATTERN = /^[0-9a-f]{12}$/;

export const ACCOUNT_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export interface ResolvedApiKey {
  account: string;
  keyId: string;
  /** What API Gateway meters and throttles the caller under (the authorizer's usageIdentifierKey). */
  usageIdentifier: string;
}

/** A key as it is made: the key for its holder, the usage identifier for API Gateway. */
export interface NewApiKey {
  key: string;
  usageIdentifier: string;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

const keyIdOf = (keyHash: string) => keyHash.slice(0, 12);

/** The id a key is listed under: a prefix of its hash, safe to show and to name things after. */
export const apiKeyId = (key: string) => keyIdOf(hashApiKey(key));

export const isApiKeyForm = (value: string) => API_KEY_PATTERN.test(value);

/**
 * The usage identifier is hex: API Gateway takes 20 to 128 characters as an API key's value, and
 * hex leaves no doubt about which punctuation it accepts.
 */
export function generateApiKey(): NewApiKey {
  return { key: KEY_PREFIX + randomBytes(KEY_BYTES).toString('base64url'), usageIdentifier: randomBytes(32).toString('hex') };
}

export function assertAccountName(account: string): void {
  if (!ACCOUNT_NAME_PATTERN.test(account)) {
    throw new Error(`Invalid account name '${account}': use 1-63 lower-case letters, digits, '-' or '_'`);
  }
}

/** A new key counted on its account (lib/limits/api-keys.ts), its item not yet written. */
export interface CountedNewKey extends NewApiKey {
  keyId: string;
  keyHash: string;
}

/** Tries at a new key whose id the account already counts: a 48-bit collision, not to be expected twice. */
const COUNT_TRIES = 3;

/**
 * Makes a key and counts it on its account, before anything else is written. `limited` (the API):
 * refused with a 400 at the account's limit; the operator's keys CLI is not.
 */
export async function countNewKey(account: string, { limited }: { limited: boolean }): Promise<CountedNewKey> {
  assertAccountName(account);
  for (let attempt = 0; attempt < COUNT_TRIES; attempt += 1) {
    const made = generateApiKey();
    const keyHash = hashApiKey(made.key);
    const key = { ...made, keyHash, keyId: keyIdOf(keyHash) };
    if (await countNewApiKey(account, key, { limited })) return key;
  }
  throw new Conflict(`Account '${account}' already has a key with this key's id: make another key`);
}

/** A key of an account as the store holds it: its item and the hash it is stored under. */
export interface StoredKey {
  keyHash: string;
  record: ApiKeyRecord;
}

/** How a key is made: `name` labels it, `gateway` records its API Gateway key on AWS, `creator` is the key that makes it (through the API). */
export interface NewKeyOptions {
  gateway?: { apiGatewayKeyId: string; usagePlan: string };
  name?: string;
  creator?: StoredKey;
}

/**
 * Writes the item of a counted key, after the items that name it by its id and (with `creator`) as
 * made by its creator, so that a revocation finds it from the moment it works. If a write fails, the
 * key's count is given back. The key itself is returned once, never stored.
 */
export async function storeCountedKey(account: string, counted: CountedNewKey, { gateway, name, creator }: NewKeyOptions = {}): Promise<{ key: string; record: ApiKeyRecord }> {
  const { key, keyHash, keyId, usageIdentifier } = counted;
  const lineage = creator && { createdBy: creator.record.keyId, ancestorKeyHashes: [...(creator.record.ancestorKeyHashes ?? []), creator.keyHash] };
  const record: ApiKeyRecord = { keyId, account, ...(name ? { name } : {}), createdAt: new Date().toISOString(), usageIdentifier, ...gateway, ...lineage };
  try {
    if (creator) await putApiKeyMadeBy(account, creator.record.keyId, keyId, keyHash);
    // A 48-bit collision with a revoked key's id: not to be expected.
    if (!(await putApiKeyIdItem(account, keyId, keyHash))) throw new Conflict(`Account '${account}' already has a key with this key's id: make another key`);
    await putApiKeyItem(keyHash, record);
  } catch (error) {
    await giveBackCount(account, counted);
    throw error;
  }
  return { key, record };
}

/** A creation that failed before the key's item was written; a count left behind is dropped when it would refuse a call. */
export async function giveBackCount(account: string, counted: CountedNewKey): Promise<void> {
  await uncountApiKey(account, counted).catch((error: unknown) =>
    logger.warn('could not give back the count of an API key not created', { account, keyId: counted.keyId, error: (error as Error).name }),
  );
}

/**
 * Stores a key for the account (and the account, if new), counted whatever the account's limit (the
 * operator's keys CLI and the local start make keys this way). The key itself is returned once.
 */
export async function createApiKey(account: string, options: Pick<NewKeyOptions, 'gateway' | 'name'> = {}): Promise<{ key: string; record: ApiKeyRecord }> {
  const counted = await countNewKey(account, { limited: false });
  return storeCountedKey(account, counted, { gateway: options.gateway, name: options.name });
}

/** How precisely lastUsedAt is kept: it is written at most once per key in this time, whatever the key's traffic. */
export const LAST_USED_PRECISION_MS = 3_600_000;

/**
 * The account a key belongs to, or undefined for a key that is unknown, revoked (or made by a key
 * revoked since, directly or not) or not of a key's form. Records the key's use when its lastUsedAt is absent or older than LAST_USED_PRECISION_MS.
 */
export async function resolveApiKey(key: string, now = Date.now()): Promise<ResolvedApiKey | undefined> {
  if (!isApiKeyForm(key)) return undefined;
  const keyHash = hashApiKey(key);
  const record = await getApiKeyItem(keyHash);
  if (!record || !(await keyInForce({ keyHash, record }, [], { consistent: false }))) return undefined;
  await recordKeyUse(keyHash, record, now);
  // A key made before usage identifiers existed is its own API Gateway key's value.
  return { account: record.account, keyId: record.keyId, usageIdentifier: record.usageIdentifier ?? key };
}

/** A failure to write lastUsedAt never refuses the call: the time is a convenience, the call is not. */
async function recordKeyUse(keyHash: string, record: ApiKeyRecord, now: number): Promise<void> {
  const since = new Date(now - LAST_USED_PRECISION_MS).toISOString();
  if (record.lastUsedAt !== undefined && record.lastUsedAt >= since) return;
  try {
    await markApiKeyUsed(keyHash, new Date(now).toISOString(), since);
  } catch (error) {
    logger.warn('could not record when the API key was last used', { account: record.account, keyId: record.keyId, error: (error as Error).name });
  }
}

/**
 * Whether the key authorizes calls: it is not revoked or being revoked, nor is any key it descends
 * from (the keys that made it), nor is it or one of them the root of a revocation under way (`revocationsUnderWay`, the
 * roots' hashes). `consistent`: sees every revocation stored before it.
 */
export async function keyInForce({ keyHash, record }: StoredKey, revocationsUnderWay: string[], { consistent }: { consistent: boolean }): Promise<boolean> {
  if (record.revokedAt !== undefined || record.revokingSince !== undefined) return false;
  const ancestors = record.ancestorKeyHashes ?? [];
  if ([...ancestors, keyHash].some((hash) => revocationsUnderWay.includes(hash))) return false;
  return ancestors.length === 0 || (await revokedApiKeyHashes(ancestors, { consistent })).length === 0;
}

/**
 * The account's key `keyId` as it is now (a consistent read of its item), found by the account's
 * count, or for a key it does not count by the item naming the key's id. An account whose keys were
 * made before those items has them written from its listing, once. Undefined when the account has no
 * key with that id. `count`: the account's, as just read; undefined for an account with none.
 */
export async function findAccountKey(account: string, keyId: string, count: AccountKeyCount | undefined): Promise<StoredKey | undefined> {
  const keyHash = count?.keys[keyId]?.keyHash ?? (await getApiKeyHashById(account, keyId)) ?? (count?.keyIdsIndexed ? undefined : await indexKeyIds(account, keyId));
  const record = keyHash === undefined ? undefined : await getApiKeyItem(keyHash, { consistent: true });
  return record && record.account === account && record.keyId === keyId ? { keyHash: keyHash!, record } : undefined;
}

/**
 * Writes the id's item of each of the account's keys (made before those items existed), then marks
 * the account's count as having them all. The hash of the key with id `keyId`, if the account has one.
 */
async function indexKeyIds(account: string, keyId: string): Promise<string | undefined> {
  const keys = await queryAccountApiKeys(account);
  for (const { keyHash, record } of keys) await putApiKeyIdItem(account, record.keyId, keyHash);
  await markKeyIdsIndexed(account);
  const found = keys.filter(({ record }) => record.keyId === keyId);
  // Two keys of one account sharing 48 bits of hash: not to be expected, never to be guessed between.
  if (found.length > 1) throw new Conflict(`Account '${account}' has ${found.length} keys with id ${keyId}: revoke the key itself with the operator's keys CLI`);
  return found[0]?.keyHash;
}

export async function listApiKeys(account: string): Promise<ApiKeyRecord[]> {
  return (await queryAccountApiKeys(account)).map(({ record }) => record);
}
