import {
  APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  GetUsagePlansCommand,
} from '@aws-sdk/client-api-gateway';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { ensureTable } from '../../../infra/local/embedded-dynamodb';
import { createAccountApiKey, revokeAccountApiKey } from '../../../lib/keys/account-api-keys';
import { countNewKey, createApiKey, hashApiKey, listApiKeys, storeCountedKey, type ApiKeyRecord } from '../../../lib/keys/api-keys';
import { getAccountKeyCount } from '../../../lib/store/api-keys';
import { dynamoDb, tableName } from '../../../lib/store/client';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount } from '../../support/factories';

// The API's key operations as they run on AWS, where the stack names the usage plans to them. API
// Gateway is mocked (no AWS account here); the table is the real embedded store.
useEmbeddedStore({ USAGE_PLAN_NAME_STANDARD: 'webhooks-test-standard', USAGE_PLAN_NAME_UNLIMITED: 'webhooks-test-unlimited' });
const apiGateway = mockClient(APIGatewayClient);

beforeEach(() => {
  apiGateway.reset();
  apiGateway.on(GetUsagePlansCommand).resolves({
    items: [
      { id: 'plan-other', name: 'webhooks-other-standard' },
      { id: 'plan-std', name: 'webhooks-test-standard' },
      { id: 'plan-unl', name: 'webhooks-test-unlimited' },
    ],
  });
  apiGateway.on(CreateApiKeyCommand).resolves({ id: 'gw-new' });
  apiGateway.on(CreateUsagePlanKeyCommand).resolves({});
  apiGateway.on(DeleteApiKeyCommand).resolves({});
});

/** A key made by the keys CLI on the stage: the caller. */
async function callerKey(usagePlan?: 'standard' | 'unlimited') {
  const account = randomAccount();
  const gateway = usagePlan && { apiGatewayKeyId: `gw-${usagePlan}`, usagePlan };
  const { key, record } = await createApiKey(account, { gateway });
  return { account, key, record };
}

/** A key made by `creator` (one it may revoke), recorded with the API Gateway key `apiGatewayKeyId`. */
async function keyMadeBy(account: string, creator: { key: string; record: ApiKeyRecord }, apiGatewayKeyId: string) {
  const counted = await countNewKey(account, { limited: false });
  return storeCountedKey(account, counted, { gateway: { apiGatewayKeyId, usagePlan: 'standard' }, creator: { keyHash: hashApiKey(creator.key), record: creator.record } });
}

const recordOf = async (account: string, keyId: string): Promise<ApiKeyRecord | undefined> =>
  (await listApiKeys(account)).find((record) => record.keyId === keyId);

describe('createApiKey on AWS', () => {
  it("makes the new key's API Gateway key, valued with its usage identifier, under the calling key's usage plan", async () => {
    const { account, record: caller } = await callerKey('unlimited');
    const created = await createAccountApiKey(account, caller.keyId, {}, new APIGatewayClient({}));

    const stored = await recordOf(account, created.keyId);
    expect(stored).toMatchObject({ apiGatewayKeyId: 'gw-new', usagePlan: 'unlimited' });
    const sent = apiGateway.commandCalls(CreateApiKeyCommand).map((call) => call.args[0].input);
    expect(sent).toEqual([{ name: `${account}-${created.keyId}`, value: stored!.usageIdentifier, enabled: true, tags: { stage: 'local' } }]);
    expect(JSON.stringify(apiGateway.calls().map((call) => call.args[0].input))).not.toContain(created.key.slice(4));
    expect(apiGateway.commandCalls(CreateUsagePlanKeyCommand).map((call) => call.args[0].input)).toEqual([
      { usagePlanId: 'plan-unl', keyId: 'gw-new', keyType: 'API_KEY' },
    ]);
    expect(created).toMatchObject({ current: false, createdAt: Date.parse(stored!.createdAt) });
  });

  it("puts the key under the stage's default plan when the calling key has none recorded", async () => {
    const { account, record: caller } = await callerKey();
    const created = await createAccountApiKey(account, caller.keyId, {}, new APIGatewayClient({}));
    expect(await recordOf(account, created.keyId)).toMatchObject({ apiGatewayKeyId: 'gw-new', usagePlan: 'standard' });
    expect(apiGateway.commandCalls(CreateUsagePlanKeyCommand)[0]!.args[0].input).toMatchObject({ usagePlanId: 'plan-std' });
  });

  it('deletes the API Gateway key it made when the table write fails, and fails', async () => {
    const { account, record: caller } = await callerKey('standard');
    // The table goes away once the API Gateway key is made: the key's write that follows fails.
    apiGateway.on(CreateUsagePlanKeyCommand).callsFake(async () => {
      await dynamoDb().send(new DeleteTableCommand({ TableName: tableName() }));
      return {};
    });
    try {
      await expect(createAccountApiKey(account, caller.keyId, {}, new APIGatewayClient({}))).rejects.toThrow();
      expect(apiGateway.commandCalls(DeleteApiKeyCommand).map((call) => call.args[0].input)).toEqual([{ apiKey: 'gw-new' }]);
    } finally {
      await ensureTable(tableName());
    }
  });

  it('gives the count back when the key cannot be put under its plan, and deletes the API Gateway key made', async () => {
    const { account, record: caller } = await callerKey('standard');
    apiGateway.on(CreateUsagePlanKeyCommand).rejects(new Error('connect ECONNRESET'));
    await expect(createAccountApiKey(account, caller.keyId, {}, new APIGatewayClient({}))).rejects.toThrow('ECONNRESET');
    expect(apiGateway.commandCalls(DeleteApiKeyCommand).map((call) => call.args[0].input)).toEqual([{ apiKey: 'gw-new' }]);
    expect(await getAccountKeyCount(account)).toMatchObject({ activeKeys: 1 });
  });

  it('gives the count back when API Gateway refuses the key, and answers its throttling with a 503 and Retry-After', async () => {
    const { account, record: caller } = await callerKey('standard');
    apiGateway.on(CreateApiKeyCommand).rejects(Object.assign(new Error('Too Many Requests'), { name: 'TooManyRequestsException', retryAfterSeconds: '7' }));
    await expect(createAccountApiKey(account, caller.keyId, {}, new APIGatewayClient({}))).rejects.toMatchObject({ statusCode: 503, headers: { 'Retry-After': '7' } });
    expect(await getAccountKeyCount(account)).toMatchObject({ activeKeys: 1 });
    expect(await listApiKeys(account)).toHaveLength(1);
  });

  it("answers 409, not 500, when the calling key's usage plan is no longer offered on the stage", async () => {
    const account = randomAccount();
    const { record: caller } = await createApiKey(account, { gateway: { apiGatewayKeyId: 'gw-old', usagePlan: 'gold' } });
    await expect(createAccountApiKey(account, caller.keyId, {}, new APIGatewayClient({}))).rejects.toMatchObject({
      statusCode: 409,
      message: expect.stringContaining("usage plan 'gold' is no longer offered"),
    });
    expect(apiGateway.commandCalls(CreateApiKeyCommand)).toHaveLength(0);
  });

  it('makes no API Gateway key when the account is at its limit of keys', async () => {
    const { account, record: caller } = await callerKey('standard');
    // MAX_API_KEYS_PER_ACCOUNT is not set here: the stage's 20.
    for (let made = 1; made < 20; made += 1) await createApiKey(account);
    await expect(createAccountApiKey(account, caller.keyId, {}, new APIGatewayClient({}))).rejects.toThrow(/limit is 20 API keys per account/);
    expect(apiGateway.commandCalls(CreateApiKeyCommand)).toHaveLength(0);
  });
});

describe('revokeApiKey on AWS', () => {
  it('revokes the key in the table, then deletes its API Gateway key', async () => {
    const { account, ...caller } = await callerKey('standard');
    const { record: target } = await keyMadeBy(account, caller, 'gw-target');
    const revoked = await revokeAccountApiKey(account, caller.record.keyId, target.keyId, new APIGatewayClient({}));
    expect(revoked).toMatchObject({ keyId: target.keyId, revokedAt: expect.any(Number), current: false });
    expect(apiGateway.commandCalls(DeleteApiKeyCommand).map((call) => call.args[0].input)).toEqual([{ apiKey: 'gw-target' }]);
    expect((await recordOf(account, target.keyId))?.revokedAt).toBeDefined();
  });

  it('deletes the API Gateway keys of the keys made with the revoked key too', async () => {
    const { account, ...caller } = await callerKey('standard');
    const target = await keyMadeBy(account, caller, 'gw-parent');
    const child = await keyMadeBy(account, target, 'gw-child');
    await revokeAccountApiKey(account, caller.record.keyId, target.record.keyId, new APIGatewayClient({}));
    expect(apiGateway.commandCalls(DeleteApiKeyCommand).map((call) => call.args[0].input)).toEqual([{ apiKey: 'gw-parent' }, { apiKey: 'gw-child' }]);
    expect((await recordOf(account, child.record.keyId))?.revokedAt).toBeDefined();
  });

  it('revokes a key whose API Gateway key, made before keys were tagged with their stage, it may not delete', async () => {
    const { account, ...caller } = await callerKey('standard');
    const { record: target } = await keyMadeBy(account, caller, 'gw-untagged');
    apiGateway.on(DeleteApiKeyCommand).rejects(Object.assign(new Error('not authorized'), { name: 'AccessDeniedException' }));
    const revoked = await revokeAccountApiKey(account, caller.record.keyId, target.keyId, new APIGatewayClient({}));
    expect(revoked).toMatchObject({ keyId: target.keyId, revokedAt: expect.any(Number) });
  });

  it('deletes the API Gateway key an earlier revocation left, keeping the first revocation time', async () => {
    const { account, ...caller } = await callerKey('standard');
    const { record: target } = await keyMadeBy(account, caller, 'gw-left');
    apiGateway.on(DeleteApiKeyCommand).rejectsOnce(new Error('connect ETIMEDOUT')).resolves({});
    await expect(revokeAccountApiKey(account, caller.record.keyId, target.keyId, new APIGatewayClient({}))).rejects.toThrow('ETIMEDOUT');
    const first = (await recordOf(account, target.keyId))!.revokedAt!;
    const again = await revokeAccountApiKey(account, caller.record.keyId, target.keyId, new APIGatewayClient({}));
    expect(again.revokedAt).toBe(Date.parse(first));
    expect(apiGateway.commandCalls(DeleteApiKeyCommand).map((call) => call.args[0].input)).toEqual([{ apiKey: 'gw-left' }, { apiKey: 'gw-left' }]);
  });
});
