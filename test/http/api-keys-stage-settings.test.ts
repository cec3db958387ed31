import { randomAccount } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { apiKeysApi } from './support/api-keys-api';
import { expectError } from './support/expectations';

// The key operations with the stage's settings, which api-keys.test.ts lowers or lifts: the authorizer's
// cache on (60 s), 10 key creations a minute per account.
const client = useLocalService({ AUTHORIZER_CACHE_TTL_SECONDS: '' });

const { list, create, revoke, created } = apiKeysApi(client);
const listWebhooks = (key: string) => client.call('GET', '/v1/webhooks', { key });

describe('a key revoked while the authorizer cache still accepts it', () => {
  it('can neither create nor revoke keys, with the 401 of any refused key', async () => {
    const account = randomAccount();
    const first = await client.keyFor(account);
    // The operator's, and one made by it: neither made with the first key, which revokes itself alone.
    const second = { key: await client.keyFor(account), keyId: '' };
    second.keyId = (await list(second.key)).body.apiKeys.find((listed: { current: boolean }) => listed.current).keyId;
    const third = await created(second.key);
    const firstId = (await list(first)).body.apiKeys.find((listed: { current: boolean }) => listed.current).keyId;
    // The cache now holds the first key as accepted.
    expect((await listWebhooks(first)).status).toBe(200);
    expect((await revoke(first, firstId)).status).toBe(200);

    const refused = expectError(await create(first), 401);
    expect(expectError(await revoke(first, third.keyId), 401)).toBe(refused);
    expect(expectError(await list('whk_' + 'A'.repeat(43)), 401)).toBe(refused);
    // Other operations may still pass until the cache asks again: the documented 60 s.
    expect([200, 401]).toContain((await listWebhooks(first)).status);
    const keys = (await list(third.key, '?pageSize=100')).body.apiKeys as { keyId: string; revokedAt?: number }[];
    expect(keys.filter((listed) => listed.revokedAt === undefined).map((listed) => listed.keyId).sort()).toEqual([second.keyId, third.keyId].sort());
  });
});

describe('key creations per minute', () => {
  it('answers the 11th creation of a minute with 429 naming the limit, with Retry-After', async () => {
    const key = await client.keyFor(randomAccount());
    for (let count = 0; count < 10; count += 1) await created(key);
    const response = await create(key);
    expect(expectError(response, 429)).toMatch(/at most 10 per minute/);
    const retryAfter = Number(response.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Another account has its own minute.
    await created(await client.keyFor(randomAccount()));
  });
});
