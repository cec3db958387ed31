import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import type { UsagePlanName } from '../lib/config/stages';
import type { UsagePlanPlacement } from '../lib/keys/gateway-keys';
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

/** Where a key made on the stage under `plan` goes: the plan's id from the stack's outputs. */
export function usagePlanOf(deployed: DeployedStage, plan: UsagePlanName): UsagePlanPlacement {
  const usagePlanId = deployed.usagePlanIds[plan];
  if (!usagePlanId) throw new Error(`Stage ${deployed.stage} has no usage plan '${plan}'`);
  return { plan, usagePlanId, stage: deployed.stage };
}
