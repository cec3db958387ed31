import type { Context } from 'aws-lambda';
import { api } from '../../../lib/http/api';
import { logger } from '../../../lib/logger';
import { routes } from '../../../lib/routes';
import { apiEvent, randomAccount } from '../../support/factories';
import { captureStdout } from '../../support/stdout';

function lambdaContext(awsRequestId: string): Context {
  const name = 'getSharedSecret';
  return {
    awsRequestId,
    functionName: name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${name}`,
    memoryLimitInMB: '256',
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => 30_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** The JSON lines `handlerLogger` writes while `run` runs, at INFO. */
async function logLines(run: () => Promise<unknown>, handlerLogger = logger): Promise<Record<string, unknown>[]> {
  const stdout = captureStdout();
  handlerLogger.setLogLevel('INFO');
  try {
    await run();
  } finally {
    stdout.restore();
    handlerLogger.setLogLevel(process.env.POWERTOOLS_LOG_LEVEL as Parameters<typeof logger.setLogLevel>[0]);
  }
  return stdout.text().trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('api', () => {
  it("puts each invocation's own Lambda context on the handler's log lines", async () => {
    const handler = api(routes.getSharedSecret, async () => {
      logger.info('serving');
      return { secret: 'not-a-real-secret' };
    });
    const lines = await logLines(async () => {
      for (const requestId of ['request-1', 'request-2']) await handler(apiEvent({ account: randomAccount() }), lambdaContext(requestId));
    });
    const serving = lines.filter((line) => line.message === 'serving');
    expect(serving.map((line) => line.function_request_id)).toEqual(['request-1', 'request-2']);
    expect(serving[0]).toMatchObject({
      function_name: 'getSharedSecret',
      function_arn: 'arn:aws:lambda:local:000000000000:function:getSharedSecret',
      function_memory_size: '256',
    });
    expect(serving.map((line) => typeof line.cold_start)).toEqual(['boolean', 'boolean']);
    expect(serving[1]!.cold_start).toBe(false);
  });
});

describe('api, with POWERTOOLS_LOGGER_LOG_EVENT=true in the environment', () => {
  it("does not log the event, which holds the caller's API key", async () => {
    const key = 'whk_test_key_that_must_not_be_logged';
    process.env.POWERTOOLS_LOGGER_LOG_EVENT = 'true';
    let modules: { api: typeof api; logger: typeof logger; routes: typeof routes } | undefined;
    try {
      // A fresh logger reads the setting when it is created.
      jest.isolateModules(() => {
        modules = { api: require('../../../lib/http/api').api, logger: require('../../../lib/logger').logger, routes: require('../../../lib/routes').routes };
      });
    } finally {
      delete process.env.POWERTOOLS_LOGGER_LOG_EVENT;
    }
    const handler = modules!.api(modules!.routes.getSharedSecret, async () => ({ secret: 'not-a-real-secret' }));
    const event = { ...apiEvent({ account: randomAccount() }), headers: { 'x-service-api-key': key }, multiValueHeaders: { 'x-service-api-key': [key] } };
    const lines = await logLines(async () => expect((await handler(event, lambdaContext('request-3'))).statusCode).toBe(200), modules!.logger);
    expect(JSON.stringify(lines)).not.toContain(key);
  });
});
