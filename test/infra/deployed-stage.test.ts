import {
  APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  NotFoundException,
} from '@aws-sdk/client-api-gateway';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { describeDeployedStage, usagePlanOf } from '../../infra/deployed-stage';
import { createGatewayKey, deleteGatewayKey } from '../../lib/keys/gateway-keys';
import { createKey, revokeKey } from '../../infra/key-commands';
import { handler as authorizer } from '../../functions/authorizer';
import { hashApiKey, listApiKeys } from '../../lib/keys/api-keys';
import { dynamoDb, tableName } from '../../lib/store/client';
import { authorizerEvent, keyHeader } from '../support/authorizer-event';
import { useEmbeddedStore } from '../support/embedded-store';
import { randomAccount } from '../support/factories';

// No AWS account here: these mock the AWS SDK clients, the one thing that cannot be had for real.
// The table is the real embedded store.
useEmbeddedStore();
const cloudFormation = mockClient(CloudFormationClient);
const apiGateway = mockClient(APIGatewayClient);

beforeEach(() => {
  cloudFormation.reset();
  apiGateway.reset();
});

const deployed = { stage: 'prod', tableName: 'webhooks-prod-table', usagePlanIds: { standard: 'plan-std', unlimited: 'plan-unl' } };

describe('the keys CLI against a deployed stage', () => {
  it('reads the table and usage plan ids from the stage stack outputs', async () => {
    cloudFormation.on(DescribeStacksCommand, { StackName: 'webhooks-prod' }).resolves({
      Stacks: [
        {
          StackName: 'webhooks-prod',
          CreationTime: new Date(),
          StackStatus: 'CREATE_COMPLETE',
          Outputs: [
            { OutputKey: 'TableName', OutputValue: 'webhooks-prod-table' },
            { OutputKey: 'UsagePlanIdStandard', OutputValue: 'plan-std' },
            { OutputKey: 'UsagePlanIdUnlimited', OutputValue: 'plan-unl' },
            { OutputKey: 'ApiUrl', OutputValue: 'https://example.execute-api.us-east-1.amazonaws.com/prod/' },
          ],
        },
      ],
    });
    await expect(describeDeployedStage('prod', new CloudFormationClient({}))).resolves.toEqual(deployed);
  });

  it('refuses a stack without the outputs of this service', async () => {
    cloudFormation.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: 'webhooks-x', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE', Outputs: [] }] });
    await expect(describeDeployedStage('x', new CloudFormationClient({}))).rejects.toThrow(/has no TableName output/);
  });

  it('creates an API Gateway key with the given value and attaches it to the chosen plan', async () => {
    apiGateway.on(CreateApiKeyCommand).resolves({ id: 'gw-key-1' });
    apiGateway.on(CreateUsagePlanKeyCommand).resolves({});
    const id = await createGatewayKey(usagePlanOf(deployed, 'unlimited'), { value: 'usage-identifier-0123456789', name: 'acme-abc' }, new APIGatewayClient({}));
    expect(id).toBe('gw-key-1');
    expect(apiGateway.commandCalls(CreateApiKeyCommand)[0]!.args[0].input).toEqual({ name: 'acme-abc', value: 'usage-identifier-0123456789', enabled: true, tags: { stage: 'prod' } });
    expect(apiGateway.commandCalls(CreateUsagePlanKeyCommand)[0]!.args[0].input).toEqual({ usagePlanId: 'plan-unl', keyId: 'gw-key-1', keyType: 'API_KEY' });
  });

  it('removes the API Gateway key again when attaching it to the plan fails', async () => {
    apiGateway.on(CreateApiKeyCommand).resolves({ id: 'gw-key-2' });
    apiGateway.on(CreateUsagePlanKeyCommand).rejects(new Error('plan gone'));
    apiGateway.on(DeleteApiKeyCommand).resolves({});
    await expect(createGatewayKey(usagePlanOf(deployed, 'standard'), { value: 'whk_x', name: 'n' }, new APIGatewayClient({}))).rejects.toThrow('plan gone');
    expect(apiGateway.commandCalls(DeleteApiKeyCommand)[0]!.args[0].input).toEqual({ apiKey: 'gw-key-2' });
  });

  it('treats an API Gateway key that is already gone as deleted, and says it was', async () => {
    apiGateway.on(DeleteApiKeyCommand).rejects(new NotFoundException({ message: 'gone', $metadata: {} }));
    await expect(deleteGatewayKey('gw-key-3', new APIGatewayClient({}))).resolves.toBe(false);
  });
});

const notFound = () => new NotFoundException({ message: 'Invalid API Key identifier specified', $metadata: {} });

/** A key made on the stage: API Gateway answers with the id given. */
async function keyOnStage(apiGatewayKeyId = 'gw-key') {
  apiGateway.on(CreateApiKeyCommand).resolves({ id: apiGatewayKeyId });
  apiGateway.on(CreateUsagePlanKeyCommand).resolves({});
  const account = randomAccount();
  const created = await createKey(account, { deployed, plan: 'standard', apiGateway: new APIGatewayClient({}) });
  apiGateway.reset();
  return { account, ...created };
}

describe('keys on a deployed stage', () => {
  it("gives API Gateway the key's usage identifier, never the key: the authorizer names the same identifier, and the key is nowhere but its hash", async () => {
    apiGateway.on(CreateApiKeyCommand).resolves({ id: 'gw-key-10' });
    apiGateway.on(CreateUsagePlanKeyCommand).resolves({});
    const account = randomAccount();
    const { key, record } = await createKey(account, { deployed, plan: 'unlimited', apiGateway: new APIGatewayClient({}) });

    const sent = apiGateway.commandCalls(CreateApiKeyCommand)[0]!.args[0].input;
    expect(sent).toEqual({ name: `${account}-${record.keyId}`, value: record.usageIdentifier, enabled: true, tags: { stage: 'prod' } });
    expect(JSON.stringify(apiGateway.calls().map((call) => call.args[0].input))).not.toContain(key.slice(4));
    expect(apiGateway.commandCalls(CreateUsagePlanKeyCommand)[0]!.args[0].input).toEqual({ usagePlanId: 'plan-unl', keyId: 'gw-key-10', keyType: 'API_KEY' });
    expect(await listApiKeys(account)).toEqual([expect.objectContaining({ apiGatewayKeyId: 'gw-key-10', usagePlan: 'unlimited', usageIdentifier: sent.value })]);

    const allowed = await authorizer(authorizerEvent(keyHeader(key)), {} as Context);
    expect(allowed).toMatchObject({ principalId: account, usageIdentifierKey: sent.value });

    const { Items } = await dynamoDb().send(new ScanCommand({ TableName: tableName() }));
    const stored = JSON.stringify(Items);
    expect(stored).toContain(hashApiKey(key));
    expect(stored).not.toContain(key.slice(4));
  });

  it('refuses an invalid account name before making anything in API Gateway', async () => {
    await expect(createKey('Not An Account', { deployed, plan: 'standard', apiGateway: new APIGatewayClient({}) })).rejects.toThrow(/Invalid account name/);
    expect(apiGateway.calls()).toHaveLength(0);
  });

  it('revokes by the id keys list shows and deletes its API Gateway key', async () => {
    const { account, key, record } = await keyOnStage('gw-key-12');
    apiGateway.on(DeleteApiKeyCommand).resolves({});
    expect(await revokeKey({ account, keyId: record.keyId }, new APIGatewayClient({}))).toBe(
      `Revoked key ${record.keyId} of account '${account}' and deleted its API Gateway key gw-key-12.`,
    );
    expect(apiGateway.commandCalls(DeleteApiKeyCommand).map((call) => call.args[0].input)).toEqual([{ apiKey: 'gw-key-12' }]);
    await expect(authorizer(authorizerEvent(keyHeader(key)), {} as Context)).rejects.toThrow('Unauthorized');
  });

  it('completes a revocation whose API Gateway key was not deleted, and says so; a third run says only that it was revoked, and when', async () => {
    const { account, key, record } = await keyOnStage('gw-key-13');
    apiGateway.on(DeleteApiKeyCommand).rejectsOnce(new Error('connect ETIMEDOUT')).resolvesOnce({}).rejects(notFound());
    const client = new APIGatewayClient({});
    await expect(revokeKey({ key }, client)).rejects.toThrow('connect ETIMEDOUT');
    // The table says revoked: the key no longer works, whatever became of its API Gateway key.
    await expect(authorizer(authorizerEvent(keyHeader(key)), {} as Context)).rejects.toThrow('Unauthorized');
    const [revoked] = await listApiKeys(account);
    expect(revoked?.revokedAt).toEqual(expect.any(String));

    expect(await revokeKey({ account, keyId: record.keyId }, client)).toBe(
      `Key ${record.keyId} of account '${account}' was already revoked at ${revoked!.revokedAt}; ` +
        'its API Gateway key gw-key-13 was still there (the earlier revocation did not finish) and is now deleted.',
    );
    expect(await revokeKey({ account, keyId: record.keyId }, client)).toBe(`Key ${record.keyId} of account '${account}' was already revoked at ${revoked!.revokedAt}.`);
    expect(apiGateway.commandCalls(DeleteApiKeyCommand)).toHaveLength(3);
  });

  it('revokes a key whose API Gateway key is already gone, and says so', async () => {
    const { account, record } = await keyOnStage('gw-key-14');
    apiGateway.on(DeleteApiKeyCommand).rejects(notFound());
    expect(await revokeKey({ account, keyId: record.keyId }, new APIGatewayClient({}))).toBe(
      `Revoked key ${record.keyId} of account '${account}'; its API Gateway key gw-key-14 was already deleted.`,
    );
    expect((await listApiKeys(account))[0]?.revokedAt).toEqual(expect.any(String));
  });

  it('answers undefined for an id the account has no key under, and calls no AWS API', async () => {
    const { account } = await keyOnStage('gw-key-15');
    expect(await revokeKey({ account, keyId: 'ffffffffffff' }, new APIGatewayClient({}))).toBeUndefined();
    expect(apiGateway.calls()).toHaveLength(0);
  });
});
