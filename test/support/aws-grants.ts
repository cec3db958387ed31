/**
 * Holds the AWS calls the tests recorded (test/support/aws-calls.ts) against each function's policy
 * statements in the synthesized template: a call no statement allows (action, resource, conditions)
 * is a violation, named by function and action; a statement's action on a resource no recorded call
 * used is reported as unused.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { AwsCall } from './aws-calls';
import type { Resources, Statement } from '../infra/stack-template';

type Condition = Record<string, Record<string, string | string[]>>;
type TemplateStatement = Statement & { Condition?: Condition };

/** The recorded calls in `dir`, each kind once. */
export function readRecordedCalls(dir: string): AwsCall[] {
  const lines = readdirSync(dir)
    .filter((file) => file.endsWith('.jsonl'))
    .flatMap((file) => readFileSync(path.join(dir, file), 'utf8').split('\n').filter(Boolean));
  return [...new Set(lines)].map((line) => JSON.parse(line) as AwsCall);
}

/** A template resource as the recorder names what a call was sent to (aws-calls.ts), or its JSON. */
function resourceName(resources: Resources, value: unknown): string {
  if (value === '*') return '*';
  const intrinsic = value as { 'Fn::GetAtt'?: [string, string]; Ref?: string; 'Fn::Join'?: [string, unknown[]] };
  const id = intrinsic['Fn::GetAtt']?.[0] ?? intrinsic.Ref;
  const resource = id ? resources[id] : undefined;
  if (resource?.Type === 'AWS::DynamoDB::Table') return 'table';
  if (resource?.Type === 'AWS::SQS::Queue') return String(resource.Properties.QueueName).endsWith('-deliveries') ? 'deliveryQueue' : `queue:${id}`;
  if (resource?.Type === 'AWS::SecretsManager::Secret') {
    const name = String(resource.Properties.Name);
    if (name.endsWith('-page-token-key')) return 'pageTokenKey';
    if (name.endsWith('-rpc-url')) return 'chainRpcUrl';
    return `secret:${id}`;
  }
  const joined = intrinsic['Fn::Join'];
  if (joined && joined[0] === '' && joined[1].length === 2 && resourceName(resources, joined[1][0]) === 'table') return `index${String(joined[1][1]).replace(/^\/index/, '')}`;
  // An API Gateway resource, `arn:<partition>:apigateway:<region>::/usageplans/<a plan's id>/keys`: its path, a reference in it `*`.
  const arn = typeof value === 'string' ? value : joined?.[0] === '' ? joined[1].map((part) => (typeof part === 'string' ? part : '*')).join('') : undefined;
  const apiGatewayPath = arn === undefined ? undefined : /:apigateway:[^:]*::(\/.*)$/.exec(arn)?.[1];
  if (apiGatewayPath) return `apigateway:${apiGatewayPath}`;
  return JSON.stringify(value);
}

const resourcesOf = (resources: Resources, statement: TemplateStatement) => [statement.Resource].flat().map((value) => resourceName(resources, value));
const actionsOf = (statement: TemplateStatement) => [statement.Action].flat();

const likePattern = (pattern: string) => new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);

/** Whether the call meets the statement's conditions, as far as the recorder saw them; a condition it cannot judge holds. */
function meetsConditions(call: AwsCall, condition: Condition | undefined): boolean {
  for (const [operator, keys] of Object.entries(condition ?? {})) {
    for (const [key, allowed] of Object.entries(keys)) {
      const values = [allowed].flat();
      if (key === 'dynamodb:LeadingKeys' && operator === 'ForAllValues:StringLike') {
        // A recorded prefix `APIKEY#` stands for its keys: `APIKEY#*` allows it.
        if (!(call.leadingKeys ?? []).every((prefix) => values.some((pattern) => likePattern(pattern).test(`${prefix}x`)))) return false;
      } else if (key === 'dynamodb:Attributes' && operator === 'ForAllValues:StringEquals') {
        if (!(call.attributes ?? []).every((attribute) => values.includes(attribute))) return false;
      } else if (key === 'dynamodb:ReturnValues' && operator === 'StringEqualsIfExists') {
        if (call.returnValues !== undefined && !values.includes(call.returnValues)) return false;
      }
    }
  }
  return true;
}

const allows = (resources: Resources, statement: TemplateStatement, call: AwsCall) =>
  statement.Effect === 'Allow' &&
  actionsOf(statement).some((action) => action === call.action || likePattern(action).test(call.action)) &&
  resourcesOf(resources, statement).some((resource) => resource === call.resource || likePattern(resource).test(call.resource)) &&
  meetsConditions(call, statement.Condition);

/** The name the template gives the function an entry point stands for (a chain's: the first chain's). */
export function functionNameOf(resources: Resources, entry: string): string | undefined {
  const names = Object.values(resources)
    .filter((resource) => resource.Type === 'AWS::Lambda::Function')
    .map((resource) => resource.Properties.FunctionName)
    .filter((name): name is string => typeof name === 'string');
  return names.find((name) => name.endsWith(`-${entry}`)) ?? names.sort().find((name) => new RegExp(`-${entry}\\d+$`).test(name));
}

/** Calls outside their function's grant, each named by function and action, and calls of entry points the template has no function for. */
export function callsOutsideGrants(resources: Resources, calls: AwsCall[], statementsOf: (functionName: string) => TemplateStatement[]): string[] {
  return calls.flatMap((call) => {
    const functionName = functionNameOf(resources, call.entry);
    if (!functionName) return [`${call.entry}: no function of that name in the template (${call.action})`];
    if (statementsOf(functionName).some((statement) => allows(resources, statement, call))) return [];
    const keys = call.leadingKeys?.length ? ` with partition keys ${call.leadingKeys.map((prefix) => `${prefix}…`).join(', ')}` : '';
    const attributes = call.attributes ? ` writing ${call.attributes.join(', ')}` : '';
    return [`${functionName} (${call.entry}) sends ${call.action} to ${call.resource}${keys}${attributes}: its role does not allow it`];
  });
}

/** The service actions of the functions' grants that no recorded call of theirs used: `function: action on resource`. */
export function unusedGrants(resources: Resources, calls: AwsCall[], statementsOf: (functionName: string) => TemplateStatement[], entries: string[]): string[] {
  const services = /^(dynamodb|sqs|secretsmanager|apigateway):/;
  return entries.flatMap((entry) => {
    const functionName = functionNameOf(resources, entry);
    if (!functionName) return [];
    const own = calls.filter((call) => call.entry === entry);
    return statementsOf(functionName).flatMap((statement) =>
      actionsOf(statement)
        .filter((action) => services.test(action))
        .flatMap((action) =>
          resourcesOf(resources, statement)
            // An index takes only reads by query or scan: any other action on it grants nothing.
            .filter((resource) => !resource.startsWith('index/') || /:(Query|Scan)$/.test(action))
            .filter((resource) => !own.some((call) => call.action === action && (resource === '*' || call.resource === resource)))
            .map((resource) => `${entry}: ${action} on ${resource}`),
        ),
    );
  });
}
