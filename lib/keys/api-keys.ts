import { createHash, randomBytes } from 'node:crypto';
import { Conflict } from '../errors';
import { countNewApiKey, uncountApiKey, uncountUnstoredApiKey } from '../limits/api-keys';
import { logger } from '../logger';
import {
  getApiKeyItem,
  markApiKeyRevoked,
  markApiKeyUsed,
  putApiKeyItem,
  queryAccountApiKeys,
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

/**
 * Writes the item of a counted key, with its `name` when it has one; `gateway` records the API Gateway
 * key made for it on AWS. If the write fails, the key's count is given back. The key itself is returned
 * once, never stored.
 */
export async function storeCountedKey(
  account: string,
  counted: CountedNewKey,
  { gateway, name }: { gateway?: { apiGatewayKeyId: string; usagePlan: string }; name?: string } = {},
): Promise<{ key: string; record: ApiKeyRecord }> {
  const { key, keyHash, keyId, usageIdentifier } = counted;
  const record: ApiKeyRecord = { keyId, account, ...(name ? { name } : {}), createdAt: new Date().toISOString(), usageIdentifier, ...gateway };
  try {
    await putApiKeyItem(keyHash, record);
  } catch (error) {
    await giveBackCount(account, counted);
    throw error;
  }
  return { key, record };
}

/** A creation that failed before the key's item was written; a count left behind is dropped when it would refuse a call. */
export async function giveBackCount(account: string, counted: CountedNewKey): Promise<void> {
  await uncountUnstoredApiKey(account, counted).catch((error: unknown) =>
    logger.warn('could not give back the count of an API key not created', { account, keyId: counted.keyId, error: (error as Error).name }),
  );
}

/**
 * Stores a key for the account (and the account, if new), counted whatever the account's limit (the
 * operator's keys CLI and the local start make keys this way). The key itself is returned once.
 */
export async function createApiKey(
  account: string,
  options: { gateway?: { apiGatewayKeyId: string; usagePlan: string }; name?: string } = {},
): Promise<{ key: string; record: ApiKeyRecord }> {
  const counted = await countNewKey(account, { limited: false });
  return storeCountedKey(account, counted, { gateway: options.gateway, name: options.name });
}

/** How precisely lastUsedAt is kept: it is written at most once per key in this time, whatever the key's traffic. */
export const LAST_USED_PRECISION_MS = 3_600_000;

/**
 * The account a key belongs to, or undefined for a key that is unknown, revoked or not of a key's
 * form. Records the key's use when its lastUsedAt is absent or older than LAST_USED_PRECISION_MS.
 */
export async function resolveApiKey(key: string, now = Date.now()): Promise<ResolvedApiKey | undefined> {
  if (!isApiKeyForm(key)) return undefined;
  const keyHash = hashApiKey(key);
  const record = await getApiKeyItem(keyHash);
  if (!record || record.revokedAt) return undefined;
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

export interface Revocation {
  record: ApiKeyRecord;
  /** The key was revoked before this call; `record.revokedAt` is that first time. */
  alreadyRevoked: boolean;
}

/**
 * Marks the key revoked (kept for the audit trail), whatever the account's other keys (the
 * operator's keys CLI); a key already revoked keeps its first revocation time. Undefined for an
 * unknown key.
 */
export async function revokeApiKey(key: string): Promise<Revocation | undefined> {
  const keyHash = hashApiKey(key);
  const record = await getApiKeyItem(keyHash, { consistent: true });
  if (!record) return undefined;
  return revokeCountedKey(record.account, { keyId: record.keyId, keyHash });
}

/** As revokeApiKey, for the key the account's listing shows under `keyId`: no need to hold the key. */
export async function revokeApiKeyById(account: string, keyId: string): Promise<Revocation | undefined> {
  const found = keyWithId(account, await queryAccountApiKeys(account), keyId);
  return found && revokeCountedKey(account, { keyId, keyHash: found.keyHash });
}

/** The key of `keys` (the account's, as the store lists them) listed under `keyId`. */
export function keyWithId<K extends { record: ApiKeyRecord }>(account: string, keys: K[], keyId: string): K | undefined {
  const found = keys.filter(({ record }) => record.keyId === keyId);
  // Two keys of one account sharing 48 bits of hash: not to be expected, never to be guessed between.
  if (found.length > 1) throw new Conflict(`Account '${account}' has ${found.length} keys with id ${keyId}: revoke the key itself with the operator's keys CLI`);
  return found[0];
}

/**
 * Stops counting the key on its account, even as its last, then marks it revoked: a crash between the
 * two leaves a key that still works but is not counted (docs/api-keys.md).
 */
async function revokeCountedKey(account: string, key: { keyId: string; keyHash: string }): Promise<Revocation | undefined> {
  await uncountApiKey(account, key, { keepLast: false });
  return revokeStoredKey(key.keyHash);
}

/** Marks the key revoked, once: a key already revoked keeps its first revocation time. Undefined for a key with no item. */
export async function revokeStoredKey(keyHash: string): Promise<Revocation | undefined> {
  const now = new Date().toISOString();
  const before = await markApiKeyRevoked(keyHash, now);
  if (!before) return undefined;
  const alreadyRevoked = before.revokedAt !== undefined;
  return { record: alreadyRevoked ? before : { ...before, revokedAt: now }, alreadyRevoked };
}

export async function listApiKeys(account: string): Promise<ApiKeyRecord[]> {
  return (await queryAccountApiKeys(account)).map(({ record }) => record);
}
