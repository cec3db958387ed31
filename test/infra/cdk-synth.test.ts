import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { APIGatewayProxyResult, Context } from 'aws-lambda';
import { LAMBDA_BUNDLING, LAMBDA_RUNTIME } from '../../infra/bundling';
import { LocalDeliveryQueue } from '../../infra/local/local-queue';
import { startQueueEndpoint, type QueueEndpoint } from '../../infra/local/queue-endpoint';
import { getBackfill } from '../../lib/backfills/backfills';
import type { QueueRecord } from '../../lib/deliveries/queue';
import { verifyNotification } from '../../lib/deliveries/signing';
import { createApiKey, hashApiKey, type ApiKeyRecord } from '../../lib/keys/api-keys';
import { createKeyWithGatewayKey } from '../../lib/keys/gateway-keys';
import { routeList, routes } from '../../lib/routes';
import { createWebhookBody } from '../../lib/schemas/webhook';
import { getSharedSecret } from '../../lib/secrets/shared-secret';
import { getCheckpoint } from '../../lib/store/chains';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { handler as authorizerHandler } from '../../functions/authorizer';
import { authorizerEvent, keyHeader } from '../support/authorizer-event';
import { standInCall } from '../support/aws-calls';
import { callsOutsideGrants } from '../support/aws-grants';
import { startAwsStandIn, type AwsStandIn } from '../support/aws-stand-in';
import { bundledFunctions, bundleInvoker, resultOf, scheduledEvent, type InvokeOptions } from '../support/bundles';
import { useDevChain } from '../support/dev-chain';
import { useEmbeddedStore } from '../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../support/factories';
import { LAMBDA_NODE_MAJOR, lambdaNode } from '../support/lambda-node';
import { comparableResponse, proxyEvent, type RouteRequest } from '../support/proxy-events';
import { recordedMessages } from '../support/recorded-messages';
import { startReceiver, type Receiver } from '../support/receiver';
import { statementsOf } from './stack-template';
import { useTempDir } from '../support/temp-dir';

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);
const node = lambdaNode();
const STAGE = 'prod';
/** A chain the prod stage follows, so that the template has its follower and backfill runner. */
const CHAIN_ID = '43114';
const PAGE_TOKEN_KEY = randomBytes(32).toString('hex');
/** A resource's name in the stage's stack. */
const named = (suffix: string) => `webhooks-${STAGE}-${suffix}`;

/** `npx cdk synth` as a user runs it: offline, no AWS credentials, no Docker, Lambdas bundled by esbuild. */
async function synth(stage: string, outdir: string) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('AWS_')));
  await run(path.join(ROOT, 'node_modules/.bin/cdk'), ['synth', '-c', `stage=${stage}`, '-o', outdir, '--quiet'], {
    cwd: ROOT,
    env: { ...env, CDK_DISABLE_VERSION_CHECK: 'true', CDK_CLI_NOTICES: 'false' },
  });
  return JSON.parse(await readFile(path.join(outdir, `webhooks-${stage}.template.json`), 'utf8'));
}

// One stage through the CLI: the stages differ only in settings, which the template tests synthesize
// in-process for each stage; bundling every Lambda twice would double the test's minute of CPU. It
// starts first and is awaited by the first test, so that the stand-ins and anvil start meanwhile.
const outdir = useTempDir('cdk-out-');
let synthesized: Promise<any>;
beforeAll(() => {
  synthesized = synth(STAGE, outdir());
  synthesized.catch(() => undefined);
});

// What the bundles reach instead of AWS, all on loopback: the embedded store (the same one this
// process's handlers use, configured as the prod stage with the same page-token key), the local
// queue's endpoint, a stand-in for Secrets Manager and API Gateway, anvil as chain 43114.
const queue = new LocalDeliveryQueue({ visibilityTimeoutSeconds: 30, maxReceiveCount: 5 });
let queueEndpoint: QueueEndpoint;
let aws: AwsStandIn;
let receiver: Receiver;
beforeAll(async () => {
  [queueEndpoint, aws, receiver] = await Promise.all([startQueueEndpoint(queue, { port: 0 }), startAwsStandIn(), startReceiver()]);
  process.env.DELIVERY_QUEUE_URL = queueEndpoint.url;
});
afterAll(async () => {
  await Promise.all([queueEndpoint?.close(), aws?.close(), receiver?.close()]);
  queue.close();
});
useEmbeddedStore({ STAGE, PAGE_TOKEN_KEY });
const chain = useDevChain(CHAIN_ID);

let invokeBundle: ReturnType<typeof bundleInvoker>;

describe('cdk synth', () => {
  it('synthesizes the prod stage offline with bundled Lambda code, built for the Node of its runtime', async () => {
    const template = await synthesized;
    const functions = [...bundledFunctions(template, outdir()).values()];
    expect(functions.length).toBeGreaterThan(routeList.length);
    expect(LAMBDA_BUNDLING.target).toBe(`node${LAMBDA_NODE_MAJOR}`);
    for (const fn of functions) {
      expect(fn.runtime).toBe(LAMBDA_RUNTIME.name);
      expect(existsSync(path.join(fn.assetDir, 'index.js'))).toBe(true);
      expect(existsSync(path.join(fn.assetDir, 'index.js.map'))).toBe(true);
    }
    invokeBundle = bundleInvoker(template, outdir(), node, () => ({
      tableName: process.env.TABLE_NAME!,
      queueUrl: queueEndpoint.url,
      dynamoDbEndpoint: `http://127.0.0.1:${process.env.DYNAMODB_PORT}`,
      awsEndpoint: aws.endpoint,
    }));
  }, 150_000);
});

/** Invokes the stage's function `name` from its bundle. */
const invoke = (name: string, event: unknown, options?: InvokeOptions) => invokeBundle(named(name), event, options);

/** A Lambda context as this process's handlers are given it. */
const lambdaContext = (functionName: string) =>
  ({ functionName, awsRequestId: randomBytes(8).toString('hex'), getRemainingTimeInMillis: () => 10_000 }) as unknown as Context;

describe(`the bundles, each run in a fresh Node process (${node.description})`, () => {
  const account = randomAccount('bundles');
  let key: string;
  let keyRecord: ApiKeyRecord;
  let authorizerContext: Record<string, string>;
  const watched = randomAddress();
  const backfilled = randomAddress();
  const chainWebhooks: { refused: string; delivered: string } = {} as never;
  let backfilledBlock: number;
  let backfilledTransfer: string;
  const fixtures = { webhook: '', deactivated: '', backfilled: '', alsoBackfilled: '', revokedKeyId: '', messageId: '' };
  /** What the bundle and the handler answered, by operation, for the tests after it. */
  const answered: Record<string, { bundle: any; handler: any }> = {};

  /** A webhook of the account on the chain, made by the domain function: the prod stage's API refuses a loopback URL. */
  const newWebhook = async (addresses: string[], url?: string) =>
    (await createWebhook(account, { ...createWebhookBody.parse(webhookInput({ metadata: { addresses } })), ...(url ? { url } : {}) })).id;

  beforeAll(async () => {
    ({ key, record: keyRecord } = await createApiKey(account));
    aws.putSecret(named('page-token-key'), PAGE_TOKEN_KEY);
    aws.putSecret(named(`chain-${CHAIN_ID}-rpc-url`), chain.rpcUrl());
    aws.usagePlans.set(named('standard'), 'plan-standard').set(named('unlimited'), 'plan-unlimited');
  });

  it('the authorizer allows a real key with its account in context, and refuses an unknown key, as its handler does', async () => {
    const event = authorizerEvent(keyHeader(key));
    const allowed = resultOf(await invoke('authorizer', event));
    expect(allowed).toEqual(await authorizerHandler(event, lambdaContext('authorizer')));
    expect(allowed.context).toEqual({ accountId: account, keyId: expect.any(String) });
    const unknown = authorizerEvent(keyHeader(`sk_${randomBytes(24).toString('hex')}`));
    const refused = await invoke('authorizer', unknown);
    expect(refused.error).toMatchObject({ message: 'Unauthorized' });
    await expect(authorizerHandler(unknown, lambdaContext('authorizer'))).rejects.toThrow('Unauthorized');
    // What API Gateway hands the operation's Lambda in requestContext.authorizer.
    authorizerContext = { ...allowed.context, principalId: allowed.principalId };
  });

  /**
   * A run of a scheduled function, told it has `runMs` beyond the margin it keeps before its timeout
   * (functions/follow-chain.ts, run-backfills.ts, ...): it ends that soon.
   */
  const scheduled = (name: string, marginMs: number, runMs: number) => invoke(name, scheduledEvent(named(name)), { remainingMs: marginMs + runMs });

  let queued: QueueRecord[];

  it(`a follower (followChain${CHAIN_ID}) follows anvil, records a transfer's notifications and queues them`, async () => {
    const from = await chain.fundedAddress();
    const past = await chain.send({ from, to: backfilled, value: 1n });
    backfilledBlock = Number(past.blockNumber);
    backfilledTransfer = past.transactionHash;
    // The first run starts the chain at its head: history is the backfills'.
    resultOf(await scheduled(`followChain${CHAIN_ID}`, 5_000, 3_000));
    expect((await getCheckpoint(CHAIN_ID))!.number).toBeGreaterThanOrEqual(backfilledBlock);

    // Two webhooks on the address sending to the receiver, for the dispatcher's two runs below.
    chainWebhooks.refused = await newWebhook([watched], receiver.url);
    chainWebhooks.delivered = await newWebhook([watched], receiver.url);
    const transfer = await chain.send({ from, to: watched, value: 2n });
    resultOf(await scheduled(`followChain${CHAIN_ID}`, 5_000, 3_000));

    queued = await queue.receive(10, 0);
    for (const webhookId of [chainWebhooks.refused, chainWebhooks.delivered]) {
      const [message] = await recordedMessages(account, webhookId, 5);
      expect(JSON.parse(message!.body).event.transaction.txHash).toBe(transfer.transactionHash);
      expect(queued.map((record) => JSON.parse(record.body))).toContainEqual(expect.objectContaining({ webhookId, messageId: message!.messageId }));
    }
  }, 30_000);

  it('the dispatcher consumes an SQS event: under the prod stage it refuses a loopback target; under a development stage it delivers there, batchItemFailures []', async () => {
    const recordOf = (webhookId: string) => queued.find((record) => JSON.parse(record.body).webhookId === webhookId)!;
    const refused = resultOf(await invoke('dispatchDeliveries', { Records: [recordOf(chainWebhooks.refused)] }));
    expect(refused).toEqual({ batchItemFailures: [] });
    const [refusedMessage] = await recordedMessages(account, chainWebhooks.refused, 5);
    expect(refusedMessage!.attemptLog[0]!.error).toMatch(/loopback/);

    // Neither in production nor on Lambda (AWS_LAMBDA_FUNCTION_NAME set) is loopback ever a target.
    const developmentStage = { STAGE: 'dev', AWS_LAMBDA_FUNCTION_NAME: '' };
    const delivered = resultOf(await invoke('dispatchDeliveries', { Records: [recordOf(chainWebhooks.delivered)] }, { env: developmentStage }));
    expect(delivered).toEqual({ batchItemFailures: [] });
    const [request] = await receiver.waitFor(1);
    expect(JSON.parse(request!.body).webhookId).toBe(chainWebhooks.delivered);
    const { secret } = await getSharedSecret(account);
    expect(verifyNotification({ rawBody: request!.body, headers: request!.headers as Record<string, string>, secret })).toEqual({ xSignature: true, standardWebhooks: true });
  });

  describe('every API route', () => {
    interface RouteCase {
      status: number;
      /** The request, for the bundle or the handler: the same unless the first one's effect would change the second's answer. */
      request: (side: 'bundle' | 'handler') => RouteRequest;
      /** Fields each call makes anew (ids, times, secrets): compared by type. */
      generated?: string[];
    }
    const newAddress = randomAddress();
    const created = webhookInput({ name: 'by both' });

    beforeAll(async () => {
      [fixtures.webhook, fixtures.deactivated, fixtures.backfilled, fixtures.alsoBackfilled] = await Promise.all([
        newWebhook([randomAddress(), randomAddress()]),
        newWebhook([randomAddress()]),
        newWebhook([backfilled]),
        newWebhook([backfilled]),
      ]);
      // Made by the calling key: a key may revoke only itself and the keys it made.
      fixtures.revokedKeyId = (await createKeyWithGatewayKey(account, undefined, undefined, { creator: { keyHash: hashApiKey(key), record: keyRecord } })).record.keyId;
      fixtures.messageId = (await recordedMessages(account, chainWebhooks.delivered, 1))[0]!.messageId;
    });

    const webhook = (id = fixtures.webhook) => ({ pathParameters: { id } });
    const cases: Record<string, RouteCase> = {
      generateOrRotateSharedSecret: { status: 201, request: () => ({}), generated: ['secret'] },
      getSharedSecret: { status: 200, request: () => ({}) },
      createWebhook: { status: 201, request: () => ({ body: created }), generated: ['id', 'createdAt'] },
      listWebhooks: { status: 200, request: () => ({ query: { pageSize: '2' } }) },
      getWebhook: { status: 200, request: () => webhook() },
      updateWebhook: { status: 200, request: () => ({ ...webhook(), body: { name: 'renamed by both', includeLogs: true } }) },
      deleteWebhook: { status: 200, request: () => webhook(fixtures.deactivated) },
      addAddressesToWebhook: { status: 200, request: () => ({ ...webhook(), body: { addresses: [newAddress] } }) },
      removeAddressesFromWebhook: { status: 200, request: () => ({ ...webhook(), body: { addresses: [newAddress] } }) },
      getAddressesFromWebhook: { status: 200, request: () => ({ ...webhook(), query: { pageSize: '1' } }) },
      sendTestNotification: { status: 202, request: () => webhook(), generated: ['messageId'] },
      listDeliveries: { status: 200, request: () => ({ ...webhook(chainWebhooks.delivered), query: { pageSize: '1' } }) },
      getDelivery: { status: 200, request: () => ({ pathParameters: { id: chainWebhooks.delivered, messageId: fixtures.messageId } }) },
      retryDelivery: { status: 202, request: () => ({ pathParameters: { id: chainWebhooks.delivered, messageId: fixtures.messageId } }) },
      recoverFailedDeliveries: { status: 202, request: () => ({ ...webhook(chainWebhooks.delivered), body: { since: 0 } }) },
      getWebhookStats: { status: 200, request: () => webhook(chainWebhooks.delivered) },
      getAccountStats: { status: 200, request: () => ({}) },
      // One backfill runs at a time per webhook: each side starts its own.
      createBackfill: {
        status: 202,
        request: (side) => ({ ...webhook(side === 'bundle' ? fixtures.backfilled : fixtures.alsoBackfilled), body: { fromBlock: backfilledBlock } }),
        generated: ['backfillId', 'webhookId', 'createdAt', 'updatedAt'],
      },
      listBackfills: { status: 200, request: () => webhook(fixtures.backfilled) },
      getBackfill: { status: 200, request: () => ({ pathParameters: { id: fixtures.backfilled, backfillId: answered.createBackfill!.bundle.backfillId } }) },
      // The handler's backfill, cancelled by the bundle: the handler then answers it as it is.
      cancelBackfill: { status: 202, request: () => ({ pathParameters: { id: fixtures.alsoBackfilled, backfillId: answered.createBackfill!.handler.backfillId } }) },
      listChains: { status: 200, request: () => ({}) },
      listApiKeys: { status: 200, request: () => ({ query: { pageSize: '100' } }) },
      createApiKey: { status: 201, request: () => ({ body: { name: 'by both' } }), generated: ['keyId', 'createdAt', 'key'] },
      revokeApiKey: { status: 200, request: () => ({ pathParameters: { keyId: fixtures.revokedKeyId } }) },
    };

    it('has a case for each route of lib/routes.ts', () => {
      expect(Object.keys(cases).sort()).toEqual(routeList.map((route) => route.operationId).sort());
    });

    /** The case's request answered by the bundle, then by the handler in this process. */
    async function bothAnswer(operationId: string) {
      const { status, request } = cases[operationId]!;
      const route = routes[operationId as keyof typeof routes];
      const eventOf = (side: 'bundle' | 'handler') => proxyEvent(route, request(side), { stage: STAGE, headers: keyHeader(key), authorizer: authorizerContext });
      const bundleEvent = eventOf('bundle');
      const bundled: APIGatewayProxyResult = resultOf(await invoke(operationId, bundleEvent));
      expect({ statusCode: bundled.statusCode, body: bundled.body }).toEqual({ statusCode: status, body: expect.any(String) });
      expect(bundled.headers!['x-request-id']).toBe(bundleEvent.requestContext.requestId);
      const { handler } = await import(path.join(ROOT, route.entry));
      const handled: APIGatewayProxyResult = await handler(eventOf('handler'), lambdaContext(operationId));
      return { bundled, handled };
    }

    it.each(Object.keys(cases))('%s: its bundle answers a proxy event as its handler does', async (operationId) => {
      let { bundled, handled } = await bothAnswer(operationId);
      // The statistics cover the hours up to the current one: one that turned between the two calls moves the window.
      if (JSON.parse(bundled.body).to !== JSON.parse(handled.body).to) ({ bundled, handled } = await bothAnswer(operationId));
      const generated = cases[operationId]!.generated ?? [];
      expect(comparableResponse(bundled, generated)).toEqual(comparableResponse(handled, generated));
      answered[operationId] = { bundle: JSON.parse(bundled.body), handler: JSON.parse(handled.body) };
    });

    it("createApiKey's bundle made the key's API Gateway key, tagged with the stage, under the calling key's plan", () => {
      const created = aws.calls.filter((call) => call.operation.startsWith('POST '));
      expect(created).toEqual([
        { caller: `webhooks-${STAGE}-createApiKey`, operation: 'POST /apikeys', body: expect.objectContaining({ value: expect.any(String), enabled: true, tags: { stage: STAGE } }) },
        { caller: `webhooks-${STAGE}-createApiKey`, operation: 'POST /usageplans/plan-standard/keys', body: { keyId: expect.any(String), keyType: 'API_KEY' } },
      ]);
    });
  });

  it(`a backfill runner (runBackfills${CHAIN_ID}) runs the backfill the createBackfill bundle started to completion`, async () => {
    const { backfillId } = answered.createBackfill!.bundle;
    resultOf(await scheduled(`runBackfills${CHAIN_ID}`, 30_000, 3_000));
    expect(await getBackfill(account, fixtures.backfilled, backfillId)).toMatchObject({ status: 'completed', notifications: 1 });
    const [message] = await recordedMessages(account, fixtures.backfilled, 5);
    expect(JSON.parse(message!.body).event.transaction.txHash).toBe(backfilledTransfer);
  }, 45_000);

  it('the delivery sweep, address maintenance and quarantine functions complete a run', async () => {
    const [sweep, maintenance, quarantine] = await Promise.all([
      scheduled('sweepDeliveries', 10_000, 500),
      scheduled('maintainAddresses', 30_000, 500),
      invoke(`quarantinedBlocks${CHAIN_ID}`, {}),
    ]);
    expect(resultOf(sweep)).toEqual({ queued: expect.any(Number) });
    expect(resultOf(maintenance)).toMatchObject({ passes: expect.any(Number) });
    expect(resultOf(quarantine)).toEqual({ quarantined: [] });
  }, 45_000);

  it("a bundle's error names the source file it was thrown in (the template's NODE_OPTIONS: source maps)", async () => {
    const { error } = await invoke(`quarantinedBlocks${CHAIN_ID}`, { retake: 'the latest' });
    expect(error).toMatchObject({ name: 'TypeError', message: 'retake must be a block number, got "the latest"' });
    expect(error!.stack).toMatch(/lib\/chains\/quarantine\.ts:\d+:\d+/);
  });

  it('no bundle called an AWS service the stand-ins do not answer', () => {
    expect(aws.calls.filter((call) => !/^(secretsmanager\.GetSecretValue|GET \/usageplans|POST \/apikeys|POST \/usageplans\/[^/]+\/keys)$/.test(call.operation))).toEqual([]);
  });

  it("made every Secrets Manager and API Gateway call within its function's grant in the template (what the in-process runs never send)", async () => {
    const { Resources: resources } = await synthesized;
    const calls = aws.calls.map(({ caller, operation, body }) => standInCall(STAGE, caller, operation, body));
    // What the runs above sent, so that the check below had something to check.
    expect(calls.map(({ action }) => action)).toEqual(expect.arrayContaining(['secretsmanager:GetSecretValue', 'apigateway:GET', 'apigateway:POST']));
    expect(callsOutsideGrants(resources, calls, (name) => statementsOf(resources, name))).toEqual([]);
  });
});
