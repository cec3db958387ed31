/**
 * The stack's Lambda functions as `cdk synth` wrote them (each one's asset folder in its output and
 * its settings in the template), run one invocation at a time in a fresh Node process
 * (test/support/run-bundle.cjs) with the function's own environment, as the Lambda runtime would,
 * every AWS resource it names replaced by a stand-in on loopback.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { secretArn } from './aws-stand-in';
import type { LambdaNode } from './lambda-node';

const RUNNER = path.join(__dirname, 'run-bundle.cjs');
const REGION = 'us-east-1';

type Resources = Record<string, { Type: string; Properties: Record<string, any>; Metadata?: Record<string, any> }>;
export interface Template {
  Resources: Resources;
}

export interface BundledFunction {
  functionName: string;
  runtime: string;
  assetDir: string;
  timeoutSeconds: number;
  memorySize: number;
  /** Its Environment.Variables as the template has them: strings, or CloudFormation tokens. */
  environment: Record<string, unknown>;
}

/** The Node.js functions of the template (not the CDK's own Python ones), by function name. */
export function bundledFunctions(template: Template, outdir: string): Map<string, BundledFunction> {
  const functions = Object.values(template.Resources).filter(
    (resource) => resource.Type === 'AWS::Lambda::Function' && String(resource.Properties.Runtime).startsWith('nodejs'),
  );
  return new Map(
    functions.map(({ Properties, Metadata }) => [
      Properties.FunctionName as string,
      {
        functionName: Properties.FunctionName,
        runtime: Properties.Runtime,
        assetDir: path.join(outdir, Metadata!['aws:asset:path']),
        timeoutSeconds: Properties.Timeout,
        memorySize: Properties.MemorySize,
        environment: Properties.Environment?.Variables ?? {},
      },
    ]),
  );
}

/** What stands in, on loopback, for the AWS resources and services the functions use. */
export interface StandIns {
  tableName: string;
  /** The local queue's endpoint, for the delivery queue's URL. */
  queueUrl: string;
  dynamoDbEndpoint: string;
  /** Any other service: Secrets Manager (a secret is served under secretArn(its name)), API Gateway. */
  awsEndpoint: string;
}

/**
 * A function's environment with each `{Ref}` to the table, the queue or a secret replaced by its
 * stand-in. Any other token fails, naming the variable: the test must learn what stands in for it.
 */
function resolvedEnvironment(fn: BundledFunction, template: Template, standIns: StandIns): Record<string, string> {
  const standInFor = ({ Type, Properties }: Resources[string]) =>
    ({ 'AWS::DynamoDB::Table': standIns.tableName, 'AWS::SQS::Queue': standIns.queueUrl, 'AWS::SecretsManager::Secret': secretArn(Properties.Name) })[Type];
  return Object.fromEntries(
    Object.entries(fn.environment).map(([name, value]) => {
      if (typeof value === 'string') return [name, value];
      const ref = (value as { Ref?: string }).Ref;
      const resolved = ref === undefined || !template.Resources[ref] ? undefined : standInFor(template.Resources[ref]!);
      if (resolved === undefined) throw new Error(`${fn.functionName}: nothing stands in for ${name} = ${JSON.stringify(value)}`);
      return [name, resolved];
    }),
  );
}

/**
 * What the Lambda runtime gives a function's process beside its own variables, with every AWS call
 * sent to loopback: DynamoDB's to the store, any other service's to `awsEndpoint` (the SDK's
 * AWS_ENDPOINT_URL). Static credentials, and no shared config or credentials file: nothing of this
 * machine's AWS set-up is read.
 */
function lambdaEnvironment(fn: BundledFunction, standIns: StandIns): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    TZ: 'UTC',
    LAMBDA_TASK_ROOT: fn.assetDir,
    _HANDLER: 'index.handler',
    AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`,
    AWS_LAMBDA_FUNCTION_NAME: fn.functionName,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memorySize),
    // Powertools reports a cold start only under it.
    AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
    AWS_REGION: REGION,
    AWS_DEFAULT_REGION: REGION,
    // The stand-in tells the functions' calls apart by the key they sign with (aws-stand-in.ts).
    AWS_ACCESS_KEY_ID: fn.functionName,
    AWS_SECRET_ACCESS_KEY: 'bundle-test',
    AWS_CONFIG_FILE: path.join(fn.assetDir, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: path.join(fn.assetDir, 'no-aws-credentials'),
    AWS_ENDPOINT_URL: standIns.awsEndpoint,
    AWS_ENDPOINT_URL_DYNAMODB: standIns.dynamoDbEndpoint,
  };
}

export interface BundleRun {
  /** What the handler returned, or undefined when it threw. */
  result?: any;
  error?: { name: string; message: string; stack: string };
  /** The process's stdout and stderr: the function's log lines. */
  output: string;
  durationMs: number;
}

export interface InvokeOptions {
  /** The time the invocation is told it has (getRemainingTimeInMillis at its start); the function's timeout by default. */
  remainingMs?: number;
  /** Variables changed from the function's environment. */
  env?: Record<string, string>;
}

/**
 * Invokes a function of the template by name, each time in a fresh `node` process with exactly its
 * environment (nothing of this process's). The process is killed once its time is up, as Lambda ends
 * an invocation at its timeout.
 */
export function bundleInvoker(template: Template, outdir: string, node: LambdaNode, standIns: () => StandIns) {
  const functions = bundledFunctions(template, outdir);
  return (functionName: string, event: unknown, { remainingMs, env }: InvokeOptions = {}): Promise<BundleRun> => {
    const fn = functions.get(functionName);
    if (!fn) throw new Error(`the template has no function ${functionName}`);
    const environment = { ...lambdaEnvironment(fn, standIns()), ...resolvedEnvironment(fn, template, standIns()), ...env };
    return runBundle(node, fn, event, environment, remainingMs ?? fn.timeoutSeconds * 1000);
  };
}

function runBundle(node: LambdaNode, fn: BundledFunction, event: unknown, env: Record<string, string>, remainingMs: number): Promise<BundleRun> {
  const startedAt = Date.now();
  const child = spawn(node.path, [RUNNER, fn.assetDir, fn.functionName, String(remainingMs)], { env, stdio: ['pipe', 'pipe', 'pipe', 'pipe'] });
  let output = '';
  let answer = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  (child.stdio[3] as NodeJS.ReadableStream).on('data', (chunk) => (answer += chunk));
  child.stdin!.end(JSON.stringify(event));
  const timeout = setTimeout(() => child.kill('SIGKILL'), remainingMs + 5_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timeout);
      const durationMs = Date.now() - startedAt;
      if (!answer) return reject(new Error(`${fn.functionName} ended (${signal ?? `exit code ${code}`}) after ${durationMs} ms without an answer:\n${output}`));
      resolve({ ...(JSON.parse(answer) as Pick<BundleRun, 'result' | 'error'>), output, durationMs });
    });
  });
}

/** What the handler returned; its error, with the function's output, when it threw. */
export function resultOf(run: BundleRun): any {
  if (run.error) throw new Error(`the bundle threw ${run.error.stack}\n--- its output:\n${run.output}`);
  return run.result;
}

/** EventBridge's event for a run of the schedule `ruleName`. */
export const scheduledEvent = (ruleName: string) => ({
  version: '0',
  id: randomUUID(),
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '000000000000',
  time: new Date().toISOString(),
  region: REGION,
  resources: [`arn:aws:events:${REGION}:000000000000:rule/${ruleName}`],
  detail: {},
});
