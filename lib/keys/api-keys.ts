import { createHash, randomBytes } from 'node:crypto';
import {
  getApiKeyItem,
  markApiKeyRevoked,
  putAccountIfMissing,
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

/**
 * Stores a key for the account (and the account, if new). The key itself is returned once, never
 * stored. `gateway` records the API Gateway key made for it on AWS, in the same write.
 */
export async function createApiKey(
  account: string,
  options: { generated?: NewApiKey; gateway?: { apiGatewayKeyId: string; usagePlan: string } } = {},
): Promise<{ key: string; record: ApiKeyRecord }> {
  assertAccountName(account);
  const createdAt = new Date().toISOString();
  await putAccountIfMissing(account, createdAt);
  const { key, usageIdentifier } = options.generated ?? generateApiKey();
  const keyHash = hashApiKey(key);
  const record: ApiKeyRecord = { keyId: keyIdOf(keyHash), account, createdAt, usageIdentifier, ...options.gateway };
  await putApiKeyItem(keyHash, record);
  return { key, record };
}

/** The account a key belongs to, or undefined for a key that is unknown, revoked or not of a key's form. */
export async function resolveApiKey(key: string): Promise<ResolvedApiKey | undefined> {
  if (!isApiKeyForm(key)) return undefined;
  const record = await getApiKeyItem(hashApiKey(key));
  if (!record || record.revokedAt) return undefined;
  // A key made before usage identifiers existed is its own API Gateway key's value.
  return { account: record.account, keyId: record.keyId, usageIdentifier: record.usageIdentifier ?? key };
}

export interface Revocation {
  record: ApiKeyRecord;
  /** The key was revoked before this call; `record.revokedAt` is that first time. */
  alreadyRevoked: boolean;
}

/**
 * Marks the key revoked (kept for the audit trail); a key already revoked keeps its first revocation
 * time. Undefined for an unknown key.
 */
export async function revokeApiKey(key: string): Promise<Revocation | undefined> {
  return revokeStoredKey(hashApiKey(key));
}

/** As revokeApiKey, for the key the account's listing shows under `keyId`: no need to hold the key. */
export async function revokeApiKeyById(account: string, keyId: string): Promise<Revocation | undefined> {
  const found = (await queryAccountApiKeys(account)).filter(({ record }) => record.keyId === keyId);
  // Two keys of one account sharing 48 bits of hash: not to be expected, never to be guessed between.
  if (found.length > 1) throw new Error(`Account '${account}' has ${found.length} keys with id ${keyId}: revoke the key itself`);
  return found[0] && revokeStoredKey(found[0].keyHash);
}

async function revokeStoredKey(keyHash: string): Promise<Revocation | undefined> {
  const now = new Date().toISOString();
  const before = await markApiKeyRevoked(keyHash, now);
  if (!before) return undefined;
  const alreadyRevoked = before.revokedAt !== undefined;
  return { record: alreadyRevoked ? before : { ...before, revokedAt: now }, alreadyRevoked };
}

export async function listApiKeys(account: string): Promise<ApiKeyRecord[]> {
  return (await queryAccountApiKeys(account)).map(({ record }) => record);
}
