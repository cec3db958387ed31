import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { handler as createWebhook } from '../../functions/create-webhook';
import { handler as getWebhook } from '../../functions/get-webhook';
import { handler as listWebhooks } from '../../functions/list-webhooks';
import { SERVICE_UNAVAILABLE_MESSAGE } from '../../lib/errors';
import { apiEvent, randomAccount, webhookInput } from '../support/factories';
import { runScript } from '../support/processes';

// The DynamoDB client is created on first use and cached for this file's module registry: the
// environment below is set before any handler in this file runs, and only once.
const context = {} as Context;
const someWebhookId = '0190a000-0000-7000-8000-000000000000';

/** A DynamoDB error as the service sends it on the wire. */
interface WireError {
  status: number;
  type: string;
  message: string;
}

/** An HTTP server in DynamoDB's place that answers every request with `answer`. */
function startFailingDynamoDb(answer: () => WireError): Promise<Server> {
  const server = createHttpServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const { status, type, message } = answer();
      response.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': randomBytes(8).toString('hex') });
      response.end(JSON.stringify({ __type: type, message }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** A local port that was free a moment ago: bind port 0, note what the system gave, release it. */
async function closedPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const baseEnv = () => ({
  DYNAMODB_ENDPOINT: '',
  DYNAMODB_MAX_ATTEMPTS: '1',
  TABLE_NAME: 'webhooks-unreachable',
  PAGE_TOKEN_KEY: randomBytes(32).toString('hex'),
  STAGE: 'local',
});

function expectServiceUnavailable(response: APIGatewayProxyResult): void {
  expect(response.statusCode).toBe(503);
  expect(response.headers?.['Retry-After']).toMatch(/^[1-9][0-9]*$/);
  expect(response.headers?.['Content-Type']).toBe('application/json');
  expect(JSON.parse(response.body)).toEqual({
    message: SERVICE_UNAVAILABLE_MESSAGE,
    statusCode: 503,
    error: 'Service Unavailable',
  });
}

describe('handlers when DynamoDB answers with a fault', () => {
  let nextAnswer: WireError;
  let server: Server;

  beforeAll(async () => {
    server = await startFailingDynamoDb(() => nextAnswer);
    Object.assign(process.env, baseEnv(), { DYNAMODB_PORT: String((server.address() as AddressInfo).port) });
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('list answers 503 with Retry-After when DynamoDB throttles (ProvisionedThroughputExceededException)', async () => {
    nextAnswer = {
      status: 400,
      type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
      message: 'The level of configured provisioned throughput for the table was exceeded.',
    };
    expectServiceUnavailable(await listWebhooks(apiEvent({ account: randomAccount() }), context));
  });

  it('create answers 503 with Retry-After when DynamoDB throttles (ThrottlingException)', async () => {
    nextAnswer = { status: 400, type: 'com.amazon.coral.availability#ThrottlingException', message: 'Rate of requests exceeds the allowed throughput.' };
    const response = await createWebhook(apiEvent({ account: randomAccount(), method: 'POST', body: webhookInput() }), context);
    expectServiceUnavailable(response);
  });

  it('get answers 503 with Retry-After when DynamoDB answers HTTP 500', async () => {
    nextAnswer = { status: 500, type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'Internal server error' };
    const response = await getWebhook(apiEvent({ account: randomAccount(), pathParameters: { id: someWebhookId } }), context);
    expectServiceUnavailable(response);
  });

  it('answers 500 with the generic message, not 503, when DynamoDB refuses the request as invalid', async () => {
    nextAnswer = { status: 400, type: 'com.amazon.coral.validate#ValidationException', message: 'One or more parameter values were invalid' };
    const response = await getWebhook(apiEvent({ account: randomAccount(), pathParameters: { id: someWebhookId } }), context);
    expect(response.statusCode).toBe(500);
    expect(response.headers?.['Retry-After']).toBeUndefined();
    expect(response.body).not.toContain('parameter values');
  });

  it('still answers 400 for invalid input without asking DynamoDB', async () => {
    nextAnswer = { status: 500, type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'Internal server error' };
    const response = await listWebhooks(apiEvent({ account: randomAccount(), query: { pageSize: '0' } }), context);
    expect(response.statusCode).toBe(400);
  });
});

describe('handlers whose DynamoDB endpoint is a closed port, run in a plain Node process as on Lambda', () => {
  const calls: Record<string, { entry: string; event: APIGatewayProxyEvent }> = {
    list: { entry: 'functions/list-webhooks.ts', event: apiEvent({ account: randomAccount() }) },
    create: { entry: 'functions/create-webhook.ts', event: apiEvent({ account: randomAccount(), method: 'POST', body: webhookInput() }) },
    get: { entry: 'functions/get-webhook.ts', event: apiEvent({ account: randomAccount(), pathParameters: { id: someWebhookId } }) },
  };
  const responses: Record<string, APIGatewayProxyResult> = {};

  beforeAll(async () => {
    const env = { ...baseEnv(), DYNAMODB_PORT: String(await closedPort()), POWERTOOLS_LOG_LEVEL: 'SILENT' };
    const run = await runScript('test/functions/run/invoke-handlers.ts', [JSON.stringify(Object.values(calls))], env);
    expect(run.code).toBe(0);
    const results = JSON.parse(run.lastLine) as APIGatewayProxyResult[];
    Object.keys(calls).forEach((name, index) => (responses[name] = results[index]!));
  }, 60_000);

  it('list answers 503 with Retry-After in the error shape', () => {
    expectServiceUnavailable(responses.list!);
  });

  it('create answers 503 with Retry-After in the error shape', () => {
    expectServiceUnavailable(responses.create!);
  });

  it('get answers 503 with Retry-After in the error shape', () => {
    expectServiceUnavailable(responses.get!);
  });
});
