/**
 * Runs one bundled Lambda function (an asset folder of `cdk synth`'s output) as the Lambda runtime
 * does, in this fresh process: requires `<asset>/index.js`, calls its `handler` with the event read
 * from stdin and a Lambda context, and writes `{"result": ...}` or `{"error": {name, message, stack}}`
 * as JSON to file descriptor 3. Not stdout: the function's own log lines (Powertools' JSON, metrics)
 * go there, as they go to CloudWatch on AWS. Then it exits, as Lambda freezes the sandbox, whatever
 * the function left running. Plain JavaScript, so that any Node runs it without a loader.
 *
 *   node run-bundle.cjs <asset folder> <function name> <milliseconds the invocation has> < event.json 3> result.json
 */
'use strict';
const { randomUUID } = require('node:crypto');
const { readFileSync, writeSync } = require('node:fs');
const path = require('node:path');

const [assetDir, functionName, timeoutMs] = process.argv.slice(2);
const deadline = Date.now() + Number(timeoutMs);
const requestId = randomUUID();
const context = {
  functionName,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION}:000000000000:function:${functionName}`,
  memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? '1024',
  awsRequestId: requestId,
  logGroupName: `/aws/lambda/${functionName}`,
  logStreamName: `local/${requestId}`,
  callbackWaitsForEmptyEventLoop: true,
  getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
};

const answer = (outcome, exitCode) => {
  writeSync(3, JSON.stringify(outcome));
  process.exit(exitCode);
};

(async () => {
  const event = JSON.parse(readFileSync(0, 'utf8'));
  const { handler } = require(path.resolve(assetDir, 'index.js'));
  const result = await handler(event, context);
  answer({ result: result === undefined ? null : result }, 0);
})().catch((error) => answer({ error: { name: error?.name, message: error?.message, stack: error?.stack } }, 1));
