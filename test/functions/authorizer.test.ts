import { ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import { handler } from '../../functions/authorizer';
import { stageSettings } from '../../lib/config/stages';
import { createApiKey, generateApiKey, hashApiKey, listApiKeys } from '../../lib/keys/api-keys';
import { revokeApiKey, revokeApiKeyById } from '../../lib/keys/key-revocation';
import { putApiKeyItem } from '../../lib/store/api-keys';
import { dynamoDb, tableName } from '../../lib/store/client';
import { authorizerEvent, keyHeader, methodArn, STAGE_ARN } from '../support/authorizer-event';
import { useEmbeddedStore } from '../support/embedded-store';
import { randomAccount } from '../support/factories';

useEmbeddedStore();
const context = {} as Context;

async function newKey(account = randomAccount()) {
  const { key, record } = await createApiKey(account);
  return { account, key, record };
}

describe('authorizer handler', () => {
  it("allows a valid key with a policy covering the whole stage, the account as principal and context, and the key's usage identifier", async () => {
    const { account, key, record } = await newKey();
    const result = await handler(authorizerEvent(keyHeader(key)), context);
    expect(record.usageIdentifier).toMatch(/^[0-9a-f]{64}$/);
    expect(result).toEqual({
      principalId: account,
      usageIdentifierKey: record.usageIdentifier,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: `${STAGE_ARN}/*` }],
      },
      context: { accountId: account, keyId: record.keyId },
    });
  });

  it('names each key to API Gateway by its own usage identifier, never by the key or its hash', async () => {
    const [first, second] = await Promise.all([newKey(), newKey()]);
    const usage = [first!, second!].map(async ({ key }) => (await handler(authorizerEvent(keyHeader(key)), context)).usageIdentifierKey);
    const [firstUsage, secondUsage] = await Promise.all(usage);
    expect(firstUsage).not.toBe(secondUsage);
    for (const { key } of [first!, second!]) {
      expect([firstUsage, secondUsage]).not.toContain(key);
      expect(firstUsage).not.toContain(hashApiKey(key).slice(0, 12));
    }
  });

  it('names a key stored before usage identifiers existed by the key itself, as its API Gateway key was made', async () => {
    const { key } = generateApiKey();
    const account = randomAccount();
    await putApiKeyItem(hashApiKey(key), { keyId: hashApiKey(key).slice(0, 12), account, createdAt: new Date().toISOString(), apiGatewayKeyId: 'gw-old' });
    expect(await handler(authorizerEvent(keyHeader(key)), context)).toMatchObject({ principalId: account, usageIdentifierKey: key });
  });

  it('gives the same stage-wide resource whichever method and path was called', async () => {
    const { key } = await newKey();
    const result = await handler(authorizerEvent(keyHeader(key), methodArn('DELETE', '/v1/webhooks/0190a000-0000-7000-8000-000000000000')), context);
    expect(result.policyDocument.Statement).toEqual([
      { Action: 'execute-api:Invoke', Effect: 'Allow', Resource: 'arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod/*' },
    ]);
  });

  it.each(['X-Service-Api-Key', 'X-SERVICE-API-KEY', 'x-Service-API-key'])('matches the header name %s case-insensitively', async (name) => {
    const { account, key } = await newKey();
    const result = await handler(authorizerEvent({ [name]: key }), context);
    expect(result.principalId).toBe(account);
    expect(result.context?.accountId).toBe(account);
  });

  it('resolves each key to its own account', async () => {
    const [first, second] = await Promise.all([newKey(), newKey()]);
    expect((await handler(authorizerEvent(keyHeader(first!.key)), context)).principalId).toBe(first!.account);
    expect((await handler(authorizerEvent(keyHeader(second!.key)), context)).principalId).toBe(second!.account);
  });

  it("rejects an unknown key with Error('Unauthorized')", async () => {
    const { key } = await newKey();
    const unknown = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
    await expect(handler(authorizerEvent(keyHeader(unknown)), context)).rejects.toThrow(new Error('Unauthorized'));
  });

  it("rejects a revoked key with Error('Unauthorized'), and the account's other key still works", async () => {
    const { account, key } = await newKey();
    const { key: otherKey } = await newKey(account);
    expect((await handler(authorizerEvent(keyHeader(key)), context)).principalId).toBe(account);
    await revokeApiKey(key);
    await expect(handler(authorizerEvent(keyHeader(key)), context)).rejects.toThrow(new Error('Unauthorized'));
    expect((await handler(authorizerEvent(keyHeader(otherKey)), context)).principalId).toBe(account);
  });

  it("rejects a request without the header with Error('Unauthorized')", async () => {
    await expect(handler(authorizerEvent({ accept: 'application/json' }), context)).rejects.toThrow(new Error('Unauthorized'));
  });

  it("rejects a request with no headers at all with Error('Unauthorized')", async () => {
    await expect(handler(authorizerEvent(null), context)).rejects.toThrow(new Error('Unauthorized'));
  });

  it("rejects an empty header with Error('Unauthorized')", async () => {
    await expect(handler(authorizerEvent(keyHeader('')), context)).rejects.toThrow(new Error('Unauthorized'));
  });

  it("rejects the key's hash sent in place of the key with Error('Unauthorized')", async () => {
    const { key } = await newKey();
    await expect(handler(authorizerEvent(keyHeader(hashApiKey(key))), context)).rejects.toThrow(new Error('Unauthorized'));
  });
});

describe('API keys', () => {
  it('stores a key only as its SHA-256: the raw key appears in no item of the table', async () => {
    const { key } = await newKey();
    const items: Record<string, AttributeValue>[] = [];
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await dynamoDb().send(new ScanCommand({ TableName: tableName(), ExclusiveStartKey: startKey }));
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    const stored = JSON.stringify(items);
    expect(stored).toContain(hashApiKey(key));
    expect(stored).not.toContain(key);
    expect(stored).not.toContain(key.slice(4));
  });

  it('returns a new key each time, with a keyId that is the start of its SHA-256', async () => {
    const account = randomAccount();
    const [first, second] = await Promise.all([createApiKey(account), createApiKey(account)]);
    expect(first.key).not.toBe(second.key);
    expect(first.key).toMatch(/^whk_[A-Za-z0-9_-]{43}$/);
    expect(first.record.keyId).toBe(hashApiKey(first.key).slice(0, 12));
  });

  it("lists an account's keys by keyId, with revokedAt only on the revoked one, and no key values", async () => {
    const account = randomAccount();
    const kept = await createApiKey(account);
    const revoked = await createApiKey(account);
    await createApiKey(randomAccount());
    const revokedRecord = await revokeApiKey(revoked.key);
    const records = await listApiKeys(account);
    expect([...records].sort((a, b) => a.keyId.localeCompare(b.keyId))).toEqual(
      [
        { keyId: kept.record.keyId, account, createdAt: kept.record.createdAt, usageIdentifier: kept.record.usageIdentifier },
        {
          keyId: revoked.record.keyId,
          account,
          createdAt: revoked.record.createdAt,
          usageIdentifier: revoked.record.usageIdentifier,
          revokedAt: expect.any(String),
        },
      ].sort((a, b) => a.keyId.localeCompare(b.keyId)),
    );
    expect(records.find((record) => record.revokedAt)?.revokedAt).toBe(revokedRecord?.record.revokedAt);
    expect(JSON.stringify(records)).not.toContain(kept.key);
  });

  it('lists no keys for an account that has none', async () => {
    expect(await listApiKeys(randomAccount())).toEqual([]);
  });

  it('returns undefined when revoking a key that does not exist, and stores nothing for it', async () => {
    const { key } = await newKey();
    const unknown = `${key}x`;
    expect(await revokeApiKey(unknown)).toBeUndefined();
    await expect(handler(authorizerEvent(keyHeader(unknown)), context)).rejects.toThrow(new Error('Unauthorized'));
    const { Items } = await dynamoDb().send(
      new ScanCommand({
        TableName: tableName(),
        FilterExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: `APIKEY#${hashApiKey(unknown)}` } },
      }),
    );
    expect(Items).toEqual([]);
  });

  it('keeps the first revokedAt when a key is revoked twice, and says the second time that it was already revoked', async () => {
    const { key } = await newKey();
    const first = await revokeApiKey(key);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await revokeApiKey(key);
    expect(first).toMatchObject({ record: expect.objectContaining({ revokedAt: expect.any(String) }), alreadyRevoked: false });
    expect(second).toMatchObject({ record: expect.objectContaining({ revokedAt: first?.record.revokedAt }), alreadyRevoked: true });
  });

  it('revokes by the id the listing shows, only within the account it names', async () => {
    const { account, key, record } = await newKey();
    const { key: otherKey } = await newKey(account);
    expect(await revokeApiKeyById(randomAccount(), record.keyId)).toBeUndefined();
    expect((await handler(authorizerEvent(keyHeader(key)), context)).principalId).toBe(account);
    expect(await revokeApiKeyById(account, record.keyId)).toMatchObject({ record: expect.objectContaining({ keyId: record.keyId, revokedAt: expect.any(String) }), alreadyRevoked: false });
    await expect(handler(authorizerEvent(keyHeader(key)), context)).rejects.toThrow(new Error('Unauthorized'));
    expect((await handler(authorizerEvent(keyHeader(otherKey)), context)).principalId).toBe(account);
    expect(await revokeApiKeyById(account, record.keyId)).toMatchObject({ record: expect.objectContaining({ keyId: record.keyId }), alreadyRevoked: true });
  });

  it('returns undefined when revoking by an id the account has no key under', async () => {
    const { account } = await newKey();
    expect(await revokeApiKeyById(account, '000000000000')).toBeUndefined();
  });

  it.each(['local', 'dev', 'prod'])('trusts a resolved key for at most 60 s in stage %s (how long a revoked key may still work)', (stage) => {
    expect(stageSettings(stage).authorizerCacheTtlSeconds).toBeLessThanOrEqual(60);
  });

  it('refuses an account name that is not lower-case letters, digits, - or _', async () => {
    await expect(createApiKey('Acme Corp')).rejects.toThrow(/Invalid account name/);
  });
});
