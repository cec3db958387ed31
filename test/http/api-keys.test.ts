import './support/verbose-logs';
import { createApiKey } from '../../lib/keys/api-keys';
import { revokeApiKey, revokeApiKeyById } from '../../lib/keys/key-revocation';
import { INVALID_API_KEY_PAGE_TOKEN } from '../../lib/page-token';
import { getAccountKeyCount } from '../../lib/store/api-keys';
import { tableName } from '../../lib/store/client';
import { updateItem } from '../../lib/store/items';
import { accountKey } from '../../lib/store/table';
import { randomAccount } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { captureStdout } from '../support/stdout';
import { apiKeysApi } from './support/api-keys-api';
import { expectError } from './support/expectations';

const MAX_KEYS = 4;
// The authorizer's cache is off in the test service (AUTHORIZER_CACHE_TTL_SECONDS=0): a revoked key is
// refused at once. Creations per minute are not what this file tests (api-keys-stage-settings.test.ts does).
const client = useLocalService({ MAX_API_KEYS_PER_ACCOUNT: String(MAX_KEYS), MAX_API_KEY_CREATIONS_PER_MINUTE: '1000' });

/** Every key the file makes or is answered with: none may appear in a log line. */
const keysSeen: string[] = [];
let output: ReturnType<typeof captureStdout> | undefined;

beforeAll(() => {
  output = captureStdout([process.stdout, process.stderr]);
});

afterAll(() => output?.restore());

async function newAccount() {
  const account = randomAccount();
  const key = await client.keyFor(account);
  keysSeen.push(key);
  return { account, key };
}

const { list, create, revoke, created } = apiKeysApi(client, (key) => keysSeen.push(key));

async function allKeys(key: string) {
  const response = await list(key, '?pageSize=100');
  expect(response.status).toBe(200);
  expect(response.body.nextPageToken).toBeUndefined();
  return response.body.apiKeys as { keyId: string; createdAt: number; lastUsedAt?: number; revokedAt?: number; current: boolean }[];
}

describe('POST /v1/apiKeys', () => {
  it('answers 201 with the new key, shown once, which authorizes a call at once and is listed without it', async () => {
    const { key } = await newAccount();
    const before = Date.now();
    const response = await create(key);
    expect(response.status).toBe(201);
    const made = response.body;
    keysSeen.push(made.key);
    expect(Object.keys(made).sort()).toEqual(['createdAt', 'createdBy', 'current', 'key', 'keyId']);
    expect(made).toEqual({
      key: expect.stringMatching(/^whk_[A-Za-z0-9_-]{43}$/),
      keyId: expect.stringMatching(/^[0-9a-f]{12}$/),
      createdAt: expect.any(Number),
      current: false,
      createdBy: (await allKeys(key)).find((listed) => listed.current)!.keyId,
    });
    expect(made.createdAt).toBeGreaterThanOrEqual(before - 1000);

    const listedWithNew = await allKeys(made.key);
    expect(listedWithNew.find((listed) => listed.keyId === made.keyId)).toMatchObject({ keyId: made.keyId, createdAt: made.createdAt, current: true });
    expect(JSON.stringify(listedWithNew)).not.toContain(made.key);
  });

  it.each([
    ['no body', undefined],
    ['an empty object', {}],
    ['an empty name', { name: '' }],
    ['an object with unknown fields', { scopes: ['all'] }],
  ])('accepts %s as the body, and makes a key without a name', async (_, body) => {
    const { key } = await newAccount();
    const response = await create(key, body);
    expect(response.status).toBe(201);
    keysSeen.push(response.body.key);
    expect(response.body.name).toBeUndefined();
    expect((await allKeys(key)).find((listed) => listed.keyId === response.body.keyId)).not.toHaveProperty('name');
  });

  it('keeps the name given to a key, answers it and lists it', async () => {
    const { key } = await newAccount();
    const name = 'CI — déploiement 🚀 "quoted"';
    const response = await create(key, { name, scopes: ['ignored'] });
    expect(response.status).toBe(201);
    keysSeen.push(response.body.key);
    expect(response.body).toMatchObject({ keyId: expect.any(String), name });
    expect((await allKeys(key)).find((listed) => listed.keyId === response.body.keyId)).toMatchObject({ name });
    expect((await revoke(key, response.body.keyId)).body).toMatchObject({ keyId: response.body.keyId, name, revokedAt: expect.any(Number) });
  });

  it.each([
    ['a number', 7, /^Invalid body field name: must be a string/],
    ['257 characters', 'k'.repeat(257), /^Invalid body field name: must be at most 256 characters$/],
    ['a control character', 'ci\u0007', /^Invalid body field name: must not contain control characters/],
  ])('answers 400 naming name to %s, and makes no key', async (_, name, message) => {
    const { key } = await newAccount();
    const before = await allKeys(key);
    const refused = expectError(await create(key, { name }), 400);
    expect(refused).toMatch(message);
    expect(await allKeys(key)).toEqual(before);
  });

  it(`answers 400 naming the limit once the account has ${MAX_KEYS} keys not revoked, and counts a revoked key no more`, async () => {
    const { key } = await newAccount();
    const made = [];
    for (let count = 1; count < MAX_KEYS; count += 1) made.push(await created(key));
    const message = expectError(await create(key), 400);
    expect(message).toMatch(new RegExp(`limit is ${MAX_KEYS} API keys per account`));
    expect((await allKeys(key)).length).toBe(MAX_KEYS);

    expect((await revoke(key, made[0]!.keyId)).status).toBe(200);
    await created(key);
    expectError(await create(key), 400);
  });
});

describe('the count of keys not revoked, under concurrent calls', () => {
  it(`lets exactly ${MAX_KEYS} keys exist of 30 creations at once, refusing the others with 400 naming the limit`, async () => {
    const { key } = await newAccount();
    const responses = await Promise.all(Array.from({ length: 30 }, () => create(key)));
    const made = responses.filter((response) => response.status === 201);
    made.forEach((response) => keysSeen.push(response.body.key));
    expect(made).toHaveLength(MAX_KEYS - 1);
    for (const response of responses.filter((response) => response.status !== 201)) {
      expect(expectError(response, 400)).toMatch(new RegExp(`limit is ${MAX_KEYS} API keys per account`));
    }
    expect((await allKeys(key)).filter((listed) => listed.revokedAt === undefined)).toHaveLength(MAX_KEYS);
  });

  it('keeps exactly one key when every key of the account revokes itself at once, the last one refused with 409', async () => {
    const { account, key } = await newAccount();
    const keys = [key];
    // The operator's keys: none made by another, so that each revokes itself alone.
    for (let count = 1; count < MAX_KEYS; count += 1) keys.push((await createApiKey(account)).key);
    keysSeen.push(...keys);
    const ids = (await allKeys(key)).map((listed) => listed.keyId);
    const own = await Promise.all(keys.map(async (each) => (await allKeys(each)).find((listed) => listed.current)!.keyId));
    expect([...own].sort()).toEqual([...ids].sort());
    const responses = await Promise.all(keys.map((each, index) => revoke(each, own[index]!)));
    expect(responses.map((response) => response.status).sort()).toEqual([...Array(MAX_KEYS - 1).fill(200), 409]);
    const survivor = keys[responses.findIndex((response) => response.status === 409)]!;
    expect((await allKeys(survivor)).filter((listed) => listed.revokedAt === undefined)).toHaveLength(1);
  });

  it('keeps exactly one key when one key revokes every key of the account at once, itself included', async () => {
    const { account, key } = await newAccount();
    for (let count = 1; count < MAX_KEYS; count += 1) await created(key);
    const ids = (await allKeys(key)).map((listed) => listed.keyId);
    const responses = await Promise.all(ids.map((id) => revoke(key, id)));
    // 200 for all but one, at most; a call that reads the calling key after its revocation is a 401.
    expect(responses.filter((response) => response.status === 200).length).toBeLessThanOrEqual(MAX_KEYS - 1);
    expect(responses.every((response) => [200, 401, 409].includes(response.status))).toBe(true);
    expect((await getAccountKeyCount(account))?.activeKeys).toBe(1);
  });

  it("counts the operator's keys (keys CLI) too, past the limit, and lets the operator revoke the last", async () => {
    const { account, key } = await newAccount();
    for (let count = 1; count < MAX_KEYS; count += 1) await created(key);
    const operators = await createApiKey(account);
    keysSeen.push(operators.key);
    expect(await getAccountKeyCount(account)).toMatchObject({ activeKeys: MAX_KEYS + 1 });
    expect(expectError(await create(key), 400)).toMatch(`the account has ${MAX_KEYS + 1} that are not revoked`);

    const ids = (await allKeys(key)).map((listed) => listed.keyId);
    for (const id of ids.filter((id) => id !== operators.record.keyId)) expect(await revokeApiKeyById(account, id)).toMatchObject({ alreadyRevoked: false });
    expect(await getAccountKeyCount(account)).toMatchObject({ activeKeys: 1 });
    expect(await revokeApiKey(operators.key)).toMatchObject({ alreadyRevoked: false });
    expect(await getAccountKeyCount(account)).toMatchObject({ activeKeys: 0, keys: {}, revocationsUnderWay: [] });
    expectError(await list(operators.key), 401);
  });

  it('starts the count of an account made before it, from its listing, at its first key operation', async () => {
    const { account, key } = await newAccount();
    const other = await created(key);
    const revoked = await created(key);
    expect((await revoke(key, revoked.keyId)).status).toBe(200);
    await updateItem({ TableName: tableName(), Key: accountKey(account), UpdateExpression: 'REMOVE activeKeys, activeKeyHashes' });
    expect(await getAccountKeyCount(account)).toBeUndefined();

    expect((await revoke(other.key, other.keyId)).status).toBe(200);
    const count = await getAccountKeyCount(account);
    expect(count?.activeKeys).toBe(1);
    expect(Object.keys(count!.keys)).toEqual([(await allKeys(key)).find((listed) => listed.current)!.keyId]);
    expect(expectError(await revoke(key, (await allKeys(key)).find((listed) => listed.current)!.keyId), 409)).toMatch(/last key/);
  });
});

describe('GET /v1/apiKeys', () => {
  it("lists the account's keys newest first, pageSize at a time, each exactly once, the last page without a token", async () => {
    const { key } = await newAccount();
    const ids = [(await allKeys(key))[0]!.keyId];
    for (let count = 1; count < MAX_KEYS; count += 1) ids.push((await created(key)).keyId);

    const pages: { keyId: string; createdAt: number }[][] = [];
    let pageToken: string | undefined;
    do {
      const response = await list(key, `?pageSize=3${pageToken ? `&pageToken=${encodeURIComponent(pageToken)}` : ''}`);
      expect(response.status).toBe(200);
      pages.push(response.body.apiKeys);
      pageToken = response.body.nextPageToken;
      if (pageToken === undefined) expect(Object.keys(response.body)).toEqual(['apiKeys']);
    } while (pageToken);

    expect(pages.map((page) => page.length)).toEqual([3, 1]);
    const listed = pages.flat();
    expect(listed.map((entry) => entry.keyId).sort()).toEqual([...ids].sort());
    const times = listed.map((entry) => entry.createdAt);
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('marks the calling key current, and shows revoked keys with when they were revoked', async () => {
    const { key } = await newAccount();
    const [own] = await allKeys(key);
    const other = await created(key);
    const before = Date.now();
    expect((await revoke(key, other.keyId)).status).toBe(200);

    const listed = await allKeys(key);
    expect(listed.find((entry) => entry.keyId === own!.keyId)).toMatchObject({ current: true });
    expect(listed.find((entry) => entry.keyId === own!.keyId)!.revokedAt).toBeUndefined();
    const revoked = listed.find((entry) => entry.keyId === other.keyId)!;
    expect(revoked).toMatchObject({ current: false, revokedAt: expect.any(Number) });
    expect(revoked.revokedAt).toBeGreaterThanOrEqual(before - 1000);
  });

  it("never shows another account's keys", async () => {
    const first = await newAccount();
    const second = await newAccount();
    const secondIds = [(await allKeys(second.key))[0]!.keyId, (await created(second.key)).keyId];
    const firstListed = (await allKeys(first.key)).map((entry) => entry.keyId);
    expect(firstListed).toHaveLength(1);
    for (const id of secondIds) expect(firstListed).not.toContain(id);
  });

  it("answers 400 to another account's page token, and to a token altered", async () => {
    const first = await newAccount();
    await created(first.key);
    const { nextPageToken } = (await list(first.key, '?pageSize=1')).body;
    expect(nextPageToken).toEqual(expect.any(String));
    const second = await newAccount();
    expect(expectError(await list(second.key, `?pageSize=1&pageToken=${nextPageToken}`), 400, 'pageToken')).toBe(INVALID_API_KEY_PAGE_TOKEN);
    const altered = `${nextPageToken.slice(0, -2)}${nextPageToken.endsWith('AA') ? 'BB' : 'AA'}`;
    expectError(await list(first.key, `?pageSize=1&pageToken=${altered}`), 400, 'pageToken');
    expect((await list(first.key, `?pageSize=1&pageToken=${nextPageToken}`)).status).toBe(200);
  });

  it.each(['0', '101', 'x'])('answers 400 naming pageSize to pageSize=%s', async (pageSize) => {
    const { key } = await newAccount();
    expectError(await list(key, `?pageSize=${pageSize}`), 400, 'pageSize');
  });

  it('shows when a key last authorized a call, and nothing for a key that never has', async () => {
    const { key } = await newAccount();
    const unused = await created(key);
    const before = Date.now();
    await list(key);
    const listed = await allKeys(key);
    const own = listed.find((entry) => entry.current)!;
    expect(own.lastUsedAt).toBeGreaterThanOrEqual(before - 1000);
    expect(listed.find((entry) => entry.keyId === unused.keyId)!.lastUsedAt).toBeUndefined();
  });
});

describe('DELETE /v1/apiKeys/{keyId}', () => {
  it('answers 200 with the key revoked, and the key is refused from then on', async () => {
    const { key } = await newAccount();
    const [own] = await allKeys(key);
    const other = await created(key);
    const response = await revoke(key, other.keyId);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ keyId: other.keyId, createdAt: other.createdAt, revokedAt: expect.any(Number), current: false, createdBy: own!.keyId });
    expectError(await list(other.key), 401);
    expect((await list(key)).status).toBe(200);
  });

  it('revokes the calling key itself when the account has another, and answers it as current', async () => {
    const { account, key } = await newAccount();
    const [own] = await allKeys(key);
    // The operator's: a key made by this one would be revoked with it.
    const other = await createApiKey(account);
    keysSeen.push(other.key);
    const response = await revoke(key, own!.keyId);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ keyId: own!.keyId, current: true, revokedAt: expect.any(Number) });
    expectError(await list(key), 401);
    expect((await allKeys(other.key)).find((entry) => entry.keyId === own!.keyId)!.revokedAt).toBe(response.body.revokedAt);
  });

  it('answers 200 again to a key already revoked, keeping the first revocation time', async () => {
    const { key } = await newAccount();
    const other = await created(key);
    const first = await revoke(key, other.keyId);
    const again = await revoke(key, other.keyId.toUpperCase());
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it("answers 404 to another account's key, as to a key that exists nowhere, and leaves it working", async () => {
    const first = await newAccount();
    const second = await newAccount();
    const theirs = await created(second.key);
    const message = expectError(await revoke(first.key, theirs.keyId), 404);
    const nowhere = expectError(await revoke(first.key, 'abcdef012345'), 404);
    expect(message.replace(theirs.keyId, '<id>')).toBe(nowhere.replace('abcdef012345', '<id>'));
    expect((await list(theirs.key)).status).toBe(200);
    expect((await allKeys(second.key)).every((entry) => entry.revokedAt === undefined)).toBe(true);
  });

  it("answers 409 to the account's last key not revoked, saying to create another first", async () => {
    const { key } = await newAccount();
    const [own] = await allKeys(key);
    const other = await created(key);
    expect((await revoke(key, other.keyId)).status).toBe(200);
    const message = expectError(await revoke(key, own!.keyId), 409);
    expect(message).toMatch(/last key/);
    expect(message).toMatch(/create another first/);
    expect((await list(key)).status).toBe(200);
  });

  it.each(['abc', 'whk_0123456789', '0123456789abcdef'])('answers 400 naming keyId to %s', async (keyId) => {
    const { key } = await newAccount();
    expectError(await revoke(key, keyId), 400, 'keyId');
  });
});

describe('the logs', () => {
  it('hold request lines for the key operations, and never a key', () => {
    const text = output!.text();
    expect(text).toMatch(/"message":"request".*"path":"\/v1\/apiKeys"/);
    expect(keysSeen.length).toBeGreaterThan(20);
    for (const key of keysSeen) expect(text).not.toContain(key.slice(4));
  });
});
