import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { asEntryPoint } from '../../lib/entry-point';
import { routes } from '../../lib/routes';
import { getWebhookItem } from '../../lib/store/webhooks';
import { AWS_CALLS_DIR_VARIABLE, standInCall, type AwsCall } from '../support/aws-calls';
import { callsOutsideGrants, functionNameOf, readRecordedCalls, unusedGrants } from '../support/aws-grants';
import { useEmbeddedStore } from '../support/embedded-store';
import { randomAccount } from '../support/factories';
import { statementsOf, synth } from './stack-template';

// The check jest's globalTeardown runs on every call the suite recorded (test/support/global-teardown.ts).
const { resources } = synth('prod');
const outside = (...calls: AwsCall[]) => callsOutsideGrants(resources, calls, (name) => statementsOf(resources, name));

describe("the check of recorded AWS calls against the stack's grants", () => {
  it('passes calls within their function’s grant: its actions, on the table or the indexes it may query', () => {
    expect(
      outside(
        { entry: routes.getWebhook.operationId, action: 'dynamodb:GetItem', resource: 'table', leadingKeys: ['ACCOUNT#'] },
        { entry: routes.listWebhooks.operationId, action: 'dynamodb:Query', resource: 'index/gsi1', leadingKeys: [] },
        { entry: 'followChain', action: 'sqs:SendMessage', resource: 'deliveryQueue' },
        { entry: routes.listWebhooks.operationId, action: 'secretsmanager:GetSecretValue', resource: 'pageTokenKey' },
      ),
    ).toEqual([]);
  });

  it('names the function and the action of a call its role does not allow', () => {
    expect(outside({ entry: routes.getWebhook.operationId, action: 'dynamodb:DeleteItem', resource: 'table', leadingKeys: ['ACCOUNT#'] })).toEqual([
      'webhooks-prod-getWebhook (getWebhook) sends dynamodb:DeleteItem to table with partition keys ACCOUNT#…: its role does not allow it',
    ]);
    // Granted actions on a resource not granted: an index the route does not query, a queue it does not send to, another secret.
    expect(outside({ entry: routes.listWebhooks.operationId, action: 'dynamodb:Query', resource: 'index/gsi3' })).toHaveLength(1);
    expect(outside({ entry: routes.getWebhook.operationId, action: 'sqs:SendMessage', resource: 'deliveryQueue' })).toHaveLength(1);
    expect(outside({ entry: routes.listWebhooks.operationId, action: 'secretsmanager:GetSecretValue', resource: 'chainRpcUrl' })).toHaveLength(1);
    expect(outside({ entry: 'noSuchFunction', action: 'dynamodb:GetItem', resource: 'table' })).toEqual(['noSuchFunction: no function of that name in the template (dynamodb:GetItem)']);
  });

  it("holds the authorizer's write to its statement's conditions: an API key's item, lastUsedAt only", () => {
    const keyUse: AwsCall = { entry: 'authorizer', action: 'dynamodb:UpdateItem', resource: 'table', leadingKeys: ['APIKEY#'], attributes: ['lastUsedAt', 'pk', 'sk'] };
    expect(outside(keyUse)).toEqual([]);
    expect(outside({ ...keyUse, leadingKeys: ['ACCOUNT#'] })).toHaveLength(1);
    expect(outside({ ...keyUse, attributes: ['account', 'lastUsedAt', 'pk', 'sk'] })).toHaveLength(1);
    expect(outside({ ...keyUse, returnValues: 'ALL_NEW' })).toHaveLength(1);
  });

  it("holds a bundle's API Gateway and Secrets Manager calls (the stand-in's) to the IAM verbs and paths its function is granted", () => {
    const asMade = (functionName: string, operation: string, body: Record<string, unknown> = {}) => standInCall('prod', functionName, operation, body);
    expect(
      outside(
        asMade('webhooks-prod-createApiKey', 'GET /usageplans'),
        asMade('webhooks-prod-createApiKey', 'POST /apikeys'),
        asMade('webhooks-prod-createApiKey', 'POST /usageplans/abc123/keys'),
        asMade('webhooks-prod-revokeApiKey', 'DELETE /apikeys/k1'),
        asMade('webhooks-prod-followChain43114', 'secretsmanager.GetSecretValue', { SecretId: 'arn:aws:secretsmanager:us-east-1:0:secret:webhooks-prod-chain-43114-rpc-url-AbCdEf' }),
        asMade('webhooks-prod-listWebhooks', 'secretsmanager.GetSecretValue', { SecretId: 'arn:aws:secretsmanager:us-east-1:0:secret:webhooks-prod-page-token-key-AbCdEf' }),
      ),
    ).toEqual([]);
    expect(outside(asMade('webhooks-prod-revokeApiKey', 'POST /apikeys'))).toEqual(['webhooks-prod-revokeApiKey (revokeApiKey) sends apigateway:POST to apigateway:/apikeys: its role does not allow it']);
    expect(outside(asMade('webhooks-prod-createApiKey', 'DELETE /usageplans/abc123'))).toHaveLength(1);
    expect(outside(asMade('webhooks-prod-getWebhook', 'secretsmanager.GetSecretValue', { SecretId: 'arn:aws:secretsmanager:us-east-1:0:secret:webhooks-prod-page-token-key-AbCdEf' }))).toHaveLength(1);
  });

  it("finds a chain's functions under the first chain's name, and reports a grant no call used", () => {
    expect(functionNameOf(resources, 'followChain')).toMatch(/^webhooks-prod-followChain\d+$/);
    const used: AwsCall = { entry: routes.getWebhook.operationId, action: 'dynamodb:GetItem', resource: 'table' };
    expect(unusedGrants(resources, [used], (name) => statementsOf(resources, name), [routes.getWebhook.operationId])).toEqual([]);
    expect(unusedGrants(resources, [], (name) => statementsOf(resources, name), [routes.getWebhook.operationId])).toEqual(['getWebhook: dynamodb:GetItem on table']);
  });
});

describe('the recorder', () => {
  useEmbeddedStore();
  const own = mkdtempSync(path.join(tmpdir(), 'aws-calls-test-'));
  let suiteDir: string | undefined;
  beforeAll(() => {
    suiteDir = process.env[AWS_CALLS_DIR_VARIABLE];
    process.env[AWS_CALLS_DIR_VARIABLE] = own;
  });
  afterAll(() => {
    process.env[AWS_CALLS_DIR_VARIABLE] = suiteDir;
    rmSync(own, { recursive: true, force: true });
  });

  it("records a call made as a function, through the real SDK, and not one made outside any function's work", async () => {
    const account = randomAccount();
    await getWebhookItem(account, '0190d6c8-0000-7000-8000-000000000000');
    expect(readRecordedCalls(own)).toEqual([]);
    await asEntryPoint(routes.getWebhook.operationId, () => getWebhookItem(account, '0190d6c8-0000-7000-8000-000000000001'));
    expect(readRecordedCalls(own)).toEqual([{ entry: 'getWebhook', action: 'dynamodb:GetItem', resource: 'table', leadingKeys: ['ACCOUNT#'] }]);
  });
});
