import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { App, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { stageSettings, type StageSettings } from '../../lib/config/stages';
import type { IndexName, TableAction } from '../../lib/routes';
import { WebhooksStack } from '../../infra/webhooks-stack';

export type Resources = Record<string, { Type: string; Properties: Record<string, any>; DeletionPolicy?: string }>;
export interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

/** The template of the stack `build` makes in an App of its own, without bundling any Lambda (the cdk synth test bundles them for real). */
export function synthIn(build: (app: App) => Stack) {
  // An outdir of its own, removed once the template is read: without one, App leaves a cdk.out* folder in /tmp.
  const outdir = mkdtempSync(path.join(tmpdir(), 'cdk-template-'));
  try {
    const template = Template.fromStack(build(new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } })));
    return { template, resources: template.toJSON().Resources as Resources };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

/** Synthesizes a stage, with settings changed by `overrides`. */
export const synth = (stageName: string, overrides: Partial<StageSettings> = {}) =>
  synthIn((app) => new WebhooksStack(app, `webhooks-${stageName}`, { stage: { ...stageSettings(stageName), ...overrides } }));

export const ofType = (resources: Resources, type: string) => Object.entries(resources).filter(([, resource]) => resource.Type === type);

export const actionsOf = (statement: Statement) => [statement.Action].flat();

/** The statement with its actions as a sorted list: statements compare whatever order the stack lists actions in. */
export const withSortedActions = (statement: Statement) => ({ ...statement, Action: actionsOf(statement).sort() });

/** The ARN of the stack's table, and of one of its indexes, as the template writes them in policies. */
export const tableArnOf = (resources: Resources) => ({ 'Fn::GetAtt': [ofType(resources, 'AWS::DynamoDB::Table')[0]![0], 'Arn'] });
export const indexArnOf = (resources: Resources, indexName: string) => ({ 'Fn::Join': ['', [tableArnOf(resources), `/index/${indexName}`]] });

/** The statements the stack grants a function for `tableActions` (sorted) on the table, and Query on `queriedIndexes`. */
export function tableGrant(resources: Resources, { tableActions, queriedIndexes = [] }: { tableActions: readonly TableAction[]; queriedIndexes?: readonly IndexName[] }) {
  const onTable = tableActions.length > 0 ? [{ Effect: 'Allow', Action: [...tableActions].sort(), Resource: tableArnOf(resources) }] : [];
  const onIndexes = queriedIndexes.map((index) => indexArnOf(resources, index));
  return [...onTable, ...(onIndexes.length > 0 ? [{ Effect: 'Allow', Action: ['dynamodb:Query'], Resource: onIndexes.length === 1 ? onIndexes[0] : onIndexes }] : [])];
}

/** The logical id of the one resource of `type` whose `property` is `value`. */
export function idOf(resources: Resources, type: string, property: string, value: string): string {
  const matching = ofType(resources, type).filter(([, resource]) => resource.Properties[property] === value);
  if (matching.length !== 1) throw new Error(`expected one ${type} with ${property} ${value}, found ${matching.length}`);
  return matching[0]![0];
}

/** The statements of the policies attached to the role of the function named `functionName`. */
export function statementsOf(resources: Resources, functionName: string): Statement[] {
  const fn = resources[idOf(resources, 'AWS::Lambda::Function', 'FunctionName', functionName)]!;
  const [roleId] = fn.Properties.Role['Fn::GetAtt'];
  return ofType(resources, 'AWS::IAM::Policy')
    .filter(([, policy]) => policy.Properties.Roles.some((role: { Ref?: string }) => role.Ref === roleId))
    .flatMap(([, policy]) => policy.Properties.PolicyDocument.Statement);
}
