/**
 * Records every AWS call the code under test makes as one of the stack's functions (lib/entry-point.ts)
 * into AWS_CALLS_DIR, for the check that each is within that function's grant in the synthesized
 * template (test/support/aws-grants.ts, run by jest's globalTeardown). Installed in every test file
 * (jest's setupFiles): it wraps the `send` that every AWS SDK client inherits. A call made outside
 * any function's work (a test's own setup) is not recorded; nor is a call to a client that a test
 * mocked (aws-sdk-client-mock replaces `send` on the client's own class).
 */
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { APIGatewayClient } from '@aws-sdk/client-api-gateway';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { runningEntryPoint } from '../../lib/entry-point';

export const AWS_CALLS_DIR_VARIABLE = 'AWS_CALLS_DIR';

/** One kind of call a function made: what its grant must allow. */
export interface AwsCall {
  /** The function, as lib/entry-point.ts names it (a chain's without its chain id). */
  entry: string;
  /** The IAM action, e.g. `dynamodb:PutItem`, `sqs:SendMessage`. */
  action: string;
  /** What it was sent to: `table`, `index/<name>`, `deliveryQueue`, `pageTokenKey`, `chainRpcUrl`, or `other:<what>`. */
  resource: string;
  /** DynamoDB: the partition keys' prefixes (up to their first `#`) the call names, sorted. */
  leadingKeys?: string[];
  /** DynamoDB UpdateItem: the attributes its expression names, sorted. */
  attributes?: string[];
  returnValues?: string;
}

type Attribute = { S?: string } | string | undefined;
type Keyed = Record<string, Attribute>;

const prefixOf = (value: string) => (value.includes('#') ? value.slice(0, value.indexOf('#') + 1) : value);
const stringOf = (attribute: Attribute) => (typeof attribute === 'string' ? attribute : attribute?.S);

/** The partition keys a DynamoDB request names. */
function partitionKeys(input: Record<string, any>): string[] {
  const keys: Keyed[] = [];
  if (input.Key) keys.push(input.Key);
  if (input.Item) keys.push(input.Item);
  for (const request of Object.values((input.RequestItems ?? {}) as Record<string, any>)) {
    if (Array.isArray(request)) for (const write of request) keys.push(write.PutRequest?.Item ?? write.DeleteRequest?.Key ?? {});
    else keys.push(...((request.Keys ?? []) as Keyed[]));
  }
  const values = keys.map((key) => stringOf(key.pk)).filter((value): value is string => value !== undefined);
  const queried = /(?:^|[\s(])(#?\w+)\s*=\s*(:\w+)/.exec(input.KeyConditionExpression ?? '');
  if (queried && !input.IndexName) {
    const name = queried[1]!.startsWith('#') ? input.ExpressionAttributeNames?.[queried[1]!] : queried[1];
    const value = stringOf(input.ExpressionAttributeValues?.[queried[2]!]);
    if (name === 'pk' && value !== undefined) values.push(value);
  }
  return [...new Set(values.map(prefixOf))].sort();
}

const UPDATE_WORDS = new Set(['SET', 'REMOVE', 'ADD', 'DELETE', 'if_not_exists', 'list_append', 'size']);

/** The attributes an UpdateItem's expression writes, and its key's. */
function updatedAttributes(input: Record<string, any>): string[] {
  const expression = String(input.UpdateExpression ?? '').replace(/:\w+/g, ' ');
  const names = expression.match(/#?[A-Za-z_][A-Za-z0-9_]*/g) ?? [];
  const attributes = names.filter((name) => !UPDATE_WORDS.has(name)).map((name) => (name.startsWith('#') ? input.ExpressionAttributeNames?.[name] : name));
  return [...new Set([...Object.keys(input.Key ?? {}), ...attributes])].sort();
}

/** The SQS action IAM checks for a batch call: the single call's. */
const sqsAction = (command: string) => command.replace(/Batch$/, '');

function describe(serviceId: string, command: string, input: Record<string, any>): Omit<AwsCall, 'entry'> {
  if (serviceId === 'DynamoDB') {
    return {
      action: `dynamodb:${command}`,
      resource: input.IndexName ? `index/${input.IndexName}` : 'table',
      leadingKeys: partitionKeys(input),
      ...(command === 'UpdateItem' ? { attributes: updatedAttributes(input) } : {}),
      ...(input.ReturnValues ? { returnValues: input.ReturnValues } : {}),
    };
  }
  if (serviceId === 'SQS') return { action: `sqs:${sqsAction(command)}`, resource: 'deliveryQueue' };
  if (serviceId === 'Secrets Manager') {
    const named = Object.entries({ pageTokenKey: process.env.PAGE_TOKEN_SECRET_ARN, chainRpcUrl: process.env.CHAIN_RPC_URL_SECRET_ARN }).find(([, arn]) => arn === input.SecretId);
    return { action: `secretsmanager:${command}`, resource: named?.[0] ?? `other:${input.SecretId}` };
  }
  return { action: `${serviceId.toLowerCase().replace(/\s/g, '')}:${command}`, resource: 'other:' };
}

/**
 * A call a bundle made to the loopback stand-in (test/support/aws-stand-in.ts) as the recorder
 * describes one: Secrets Manager's by the secret, API Gateway's as IAM names them (its HTTP method,
 * on its path). `functionName` is the template's name of the function that made it.
 */
export function standInCall(stage: string, functionName: string, operation: string, body: Record<string, any>): AwsCall {
  const entry = functionName.replace(new RegExp(`^webhooks-${stage}-`), '');
  if (operation === 'secretsmanager.GetSecretValue') {
    const name = String(body.SecretId);
    const resource = /page-token-key-\w+$/.test(name) ? 'pageTokenKey' : /rpc-url-\w+$/.test(name) ? 'chainRpcUrl' : `other:${name}`;
    return { entry, action: 'secretsmanager:GetSecretValue', resource };
  }
  const [method, path] = operation.split(' ') as [string, string];
  return { entry, action: `apigateway:${method}`, resource: `apigateway:${path}` };
}

const seen = new Set<string>();

function record(serviceId: string, command: string, input: Record<string, any>) {
  const entry = runningEntryPoint();
  const dir = process.env[AWS_CALLS_DIR_VARIABLE];
  if (!entry || !dir) return;
  const call: AwsCall = { entry, ...describe(serviceId, command, input) };
  const line = JSON.stringify(call);
  if (seen.has(line)) return;
  seen.add(line);
  appendFileSync(path.join(dir, `calls-${process.pid}.jsonl`), `${line}\n`);
}

/** Wraps the `send` each client class inherits (once per base class). */
export function installAwsCallRecorder(): void {
  const bases = new Set([DynamoDBClient, SQSClient, SecretsManagerClient, APIGatewayClient].map((client) => Object.getPrototypeOf(client.prototype)));
  for (const base of bases) {
    const send = base.send as (this: any, command: any, ...rest: unknown[]) => unknown;
    if ((send as { recording?: true }).recording) continue;
    const recording = function (this: any, command: any, ...rest: unknown[]) {
      try {
        record(this.config?.serviceId ?? 'unknown', String(command?.constructor?.name ?? 'Unknown').replace(/Command$/, ''), command?.input ?? {});
      } catch {
        // A call the recorder cannot describe is left to the code under test.
      }
      return send.call(this, command, ...rest);
    };
    base.send = Object.assign(recording, { recording: true as const });
  }
}
