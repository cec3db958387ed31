import {
  APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  NotFoundException,
} from '@aws-sdk/client-api-gateway';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';
import { createGatewayKey, deleteGatewayKey, describeDeployedStage } from '../../infra/deployed-stage';

// No AWS account here: these mock the AWS SDK clients, the one thing that cannot be had for real.
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

  it('creates an API Gateway key with the caller key as its value and attaches it to the chosen plan', async () => {
    apiGateway.on(CreateApiKeyCommand).resolves({ id: 'gw-key-1' });
    apiGateway.on(CreateUsagePlanKeyCommand).resolves({});
    const id = await createGatewayKey(deployed, 'unlimited', { value: 'whk_secret', name: 'acme-abc' }, new APIGatewayClient({}));
    expect(id).toBe('gw-key-1');
    expect(apiGateway.commandCalls(CreateApiKeyCommand)[0]!.args[0].input).toEqual({ name: 'acme-abc', value: 'whk_secret', enabled: true });
    expect(apiGateway.commandCalls(CreateUsagePlanKeyCommand)[0]!.args[0].input).toEqual({ usagePlanId: 'plan-unl', keyId: 'gw-key-1', keyType: 'API_KEY' });
  });

  it('removes the API Gateway key again when attaching it to the plan fails', async () => {
    apiGateway.on(CreateApiKeyCommand).resolves({ id: 'gw-key-2' });
    apiGateway.on(CreateUsagePlanKeyCommand).rejects(new Error('plan gone'));
    apiGateway.on(DeleteApiKeyCommand).resolves({});
    await expect(createGatewayKey(deployed, 'standard', { value: 'whk_x', name: 'n' }, new APIGatewayClient({}))).rejects.toThrow('plan gone');
    expect(apiGateway.commandCalls(DeleteApiKeyCommand)[0]!.args[0].input).toEqual({ apiKey: 'gw-key-2' });
  });

  it('treats an API Gateway key that is already gone as deleted', async () => {
    apiGateway.on(DeleteApiKeyCommand).rejects(new NotFoundException({ message: 'gone', $metadata: {} }));
    await expect(deleteGatewayKey('gw-key-3', new APIGatewayClient({}))).resolves.toBeUndefined();
  });
});
