import { DynamoDBClient, GetItemCommand, ProvisionedThroughputExceededException, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { createApiKey, hashApiKey, LAST_USED_PRECISION_MS, listApiKeys, resolveApiKey } from '../../../lib/keys/api-keys';
import { revokeApiKey } from '../../../lib/keys/key-revocation';
import { logger } from '../../../lib/logger';
import { apiKeyKey } from '../../../lib/store/table';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount } from '../../support/factories';
import { captureStdout } from '../../support/stdout';

useEmbeddedStore();

async function newKey() {
  const account = randomAccount();
  const { key, record } = await createApiKey(account);
  const lastUsedAt = async () => (await listApiKeys(account))[0]!.lastUsedAt;
  return { account, key, record, lastUsedAt };
}

describe("a key's lastUsedAt", () => {
  it('is absent until the key first authorizes a call, then set to that time', async () => {
    const { key, lastUsedAt } = await newKey();
    expect(await lastUsedAt()).toBeUndefined();
    const now = Date.now();
    await resolveApiKey(key, now);
    expect(await lastUsedAt()).toBe(new Date(now).toISOString());
  });

  it('is written at most once an hour: a use within the hour leaves it, a use after it moves it', async () => {
    const { key, lastUsedAt } = await newKey();
    const first = Date.now();
    await resolveApiKey(key, first);
    await resolveApiKey(key, first + LAST_USED_PRECISION_MS - 1);
    expect(await lastUsedAt()).toBe(new Date(first).toISOString());
    await resolveApiKey(key, first + LAST_USED_PRECISION_MS + 1);
    expect(await lastUsedAt()).toBe(new Date(first + LAST_USED_PRECISION_MS + 1).toISOString());
  });

  it('is not moved back by an authorizer that read it stale', async () => {
    const { key, lastUsedAt } = await newKey();
    const later = Date.now() + 2 * LAST_USED_PRECISION_MS;
    await resolveApiKey(key, later);
    // This authorizer's clock is an hour and more behind: its condition fails, and nothing is written.
    await resolveApiKey(key, later - LAST_USED_PRECISION_MS - 1);
    expect(await lastUsedAt()).toBe(new Date(later).toISOString());
  });

  it('is not written for a revoked key, which is refused', async () => {
    const account = randomAccount();
    const { key } = await createApiKey(account);
    await revokeApiKey(key);
    expect(await resolveApiKey(key)).toBeUndefined();
    expect((await listApiKeys(account))[0]!.lastUsedAt).toBeUndefined();
  });
});

describe('a failure to write lastUsedAt', () => {
  it('does not refuse the call, and is logged as a warning without the key', async () => {
    const { account, key, record } = await newKey();
    const store = mockClient(DynamoDBClient);
    store.on(GetItemCommand).resolves({ Item: marshall({ ...apiKeyKey(hashApiKey(key)), ...record }, { removeUndefinedValues: true }) });
    store.on(UpdateItemCommand).rejects(new ProvisionedThroughputExceededException({ message: 'slow down', $metadata: {} }));
    const stdout = captureStdout();
    // Powertools writes warnings to stderr.
    const stderr: string[] = [];
    const writeStderr = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => stderr.push(String(chunk)) > 0);
    logger.setLogLevel('WARN');
    try {
      expect(await resolveApiKey(key)).toMatchObject({ account, keyId: record.keyId });
      expect(store.commandCalls(UpdateItemCommand)).toHaveLength(1);
    } finally {
      stdout.restore();
      writeStderr.mockRestore();
      logger.setLogLevel(process.env.POWERTOOLS_LOG_LEVEL as Parameters<typeof logger.setLogLevel>[0]);
      store.restore();
    }
    const logged = stdout.text() + stderr.join('');
    const lines = logged.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([expect.objectContaining({ level: 'WARN', keyId: record.keyId, account, error: 'ProvisionedThroughputExceededException' })]);
    expect(logged).not.toContain(key.slice(4));
  });
});
