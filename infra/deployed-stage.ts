import { APIGatewayClient, CreateApiKeyCommand, CreateUsagePlanKeyCommand, DeleteApiKeyCommand, NotFoundException } from '@aws-sdk/client-api-gateway';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import type { UsagePlanName } from '../lib/config/stages';
import { STACK_OUTPUTS, stackNameFor } from './stack-outputs';

/** What the keys CLI needs to know of a stage deployed with `cdk deploy`, read from its stack outputs. */
export interface DeployedStage {
  stage: string;
  tableName: string;
  usagePlanIds: Partial<Record<UsagePlanName, string>>;
}

export async function describeDeployedStage(stage: string, cloudFormation = new CloudFormationClient({})): Promise<DeployedStage> {
  const { Stacks } = await cloudFormation.send(new DescribeStacksCommand({ StackName: stackNameFor(stage) }));
  const outputs = Object.fromEntries((Stacks?.[0]?.Outputs ?? []).map((output) => [output.OutputKey, output.OutputValue]));
  const tableName = outputs[STACK_OUTPUTS.tableName];
  if (!tableName) throw new Error(`Stack ${stackNameFor(stage)} has no ${STACK_OUTPUTS.tableName} output: is it deployed?`);
  const plans: UsagePlanName[] = ['standard', 'unlimited'];
  return {
    stage,
    tableName,
    usagePlanIds: Object.fromEntries(plans.map((plan) => [plan, outputs[STACK_OUTPUTS.usagePlanId(plan)]]).filter(([, id]) => id)),
  };
}

/**
 * Makes the API Gateway API key whose value is the key's usage identifier (never the key itself) and
 * puts it under the stage's usage plan: the authorizer returns the usage identifier as
 * usageIdentifierKey, and API Gateway throttles and meters the request under the plan of the API key
 * with that value.
 */
export async function createGatewayKey(
  deployed: DeployedStage,
  plan: UsagePlanName,
  key: { value: string; name: string },
  apiGateway = new APIGatewayClient({}),
): Promise<string> {
  const usagePlanId = deployed.usagePlanIds[plan];
  if (!usagePlanId) throw new Error(`Stage ${deployed.stage} has no usage plan '${plan}'`);
  const { id } = await apiGateway.send(new CreateApiKeyCommand({ name: key.name, value: key.value, enabled: true }));
  try {
    await apiGateway.send(new CreateUsagePlanKeyCommand({ usagePlanId, keyId: id, keyType: 'API_KEY' }));
  } catch (error) {
    await deleteGatewayKey(id!, apiGateway);
    throw error;
  }
  return id!;
}

/** Whether there was a key to delete: false when it was already gone. */
export async function deleteGatewayKey(apiGatewayKeyId: string, apiGateway = new APIGatewayClient({})): Promise<boolean> {
  try {
    await apiGateway.send(new DeleteApiKeyCommand({ apiKey: apiGatewayKeyId }));
    return true;
  } catch (error) {
    if (error instanceof NotFoundException) return false;
    throw error;
  }
}
