import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import type { Context } from 'aws-lambda';
import { handler } from '../../functions/follow-chain';
import { handler as quarantinedBlocksHandler } from '../../functions/quarantined-blocks';
import { createWebhookBody } from '../../lib/schemas/webhook';
import { getCheckpoint, listQuarantinedBlocks } from '../../lib/store/chains';
import { getItem } from '../../lib/store/items';
import { tableName } from '../../lib/store/client';
import { chainLeaseKey } from '../../lib/store/table';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { breakWebhookRecording } from '../support/broken-webhook';
import { useDevChain } from '../support/dev-chain';
import { useEmbeddedStore } from '../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../support/factories';
import { startRpcProxy } from '../support/rpc-proxy';
import { captureStdout } from '../support/stdout';

const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/webhooks-dev-deliveries';
const SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:webhooks-dev-chain-43114-rpc-url';
// The stage's C-Chain follower, pointed by its secret at a local anvil that calls itself 43114.
const chain = useDevChain('43114');
useEmbeddedStore({ DELIVERY_QUEUE_URL: QUEUE_URL, CHAIN_ID: '43114', CHAIN_RPC_URL_SECRET_ARN: SECRET_ARN });
const secrets = mockClient(SecretsManagerClient);
const sqs = mockClient(SQSClient);

beforeEach(() => {
  secrets.reset();
  secrets.on(GetSecretValueCommand, { SecretId: SECRET_ARN }).callsFake(() => ({ SecretString: chain.rpcUrl() }));
  sqs.reset();
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
});

test('follows the chain until shortly before its timeout, records and queues what a block notifies, then gives the lease up', async () => {
  const to = randomAddress();
  const webhook = await createWebhook(randomAccount(), createWebhookBody.parse(webhookInput({ chainId: '43114', metadata: { addresses: [to] } })));
  // The lag metric goes to stdout in CloudWatch's embedded metric format.
  const stdout = captureStdout();
  const running = handler({}, { getRemainingTimeInMillis: () => 7_000 } as unknown as Context).finally(stdout.restore);
  while (!(await getCheckpoint('43114'))) await new Promise((resolve) => setTimeout(resolve, 50));
  const receipt = await chain.send({ from: await chain.fundedAddress(), to, value: 1n });
  const started = Date.now();
  await running;
  expect(Date.now() - started).toBeLessThan(3_000);
  const queued = sqs.commandCalls(SendMessageBatchCommand).flatMap((call) => call.args[0].input.Entries!.map((entry) => JSON.parse(entry.MessageBody!)));
  expect(queued).toEqual([expect.objectContaining({ webhookId: webhook.id, messageId: expect.any(String) })]);
  expect((await getCheckpoint('43114'))!.number).toBeGreaterThanOrEqual(Number(receipt.blockNumber));
  expect(await getItem({ TableName: tableName(), Key: chainLeaseKey('43114') })).toMatchObject({ holder: '', until: 0 });
  const metrics = stdout.text().split('\n').filter((line) => line.includes('"_aws"')).map((line) => JSON.parse(line));
  expect(metrics.length).toBeGreaterThan(0);
  expect(metrics.filter((metric) => metric.ChainFollowerLag !== undefined).at(-1)).toMatchObject({ chainId: '43114', ChainFollowerLag: expect.any(Number) });
  // The stall, from the follower's status beside its steps: none here.
  expect(metrics.filter((metric) => metric.ChainFollowerStalledSeconds !== undefined)).toEqual([expect.objectContaining({ chainId: '43114', ChainFollowerStalledSeconds: 0 })]);
  // The RPC URL came from the secret, read once.
  expect(secrets.commandCalls(GetSecretValueCommand)).toHaveLength(1);
}, 30_000);

test("a webhook whose notifications keep failing is quarantined alone (another account's in the same block is notified), counted in the ChainBlocksQuarantined metric, and the operator function lists and retakes it", async () => {
  const to = randomAddress();
  const [webhook, sound] = await Promise.all(
    [0, 1].map(() => createWebhook(randomAccount(), createWebhookBody.parse(webhookInput({ chainId: '43114', metadata: { addresses: [to] } })))),
  );
  const repair = await breakWebhookRecording(webhook!.id);
  const receipt = await chain.send({ from: await chain.fundedAddress(), to, value: 1n });
  const stdout = captureStdout();
  // The run lasts its remaining time less the handler's 5 s margin: 11 s, of which the four failed
  // attempts' back-off (0.5 + 1 + 2 + 4 s, lib/chains/follow-loop.ts) takes 7.5 before the fifth quarantines the block.
  await handler({}, { getRemainingTimeInMillis: () => 16_000 } as unknown as Context).finally(stdout.restore);
  expect(await listQuarantinedBlocks('43114')).toEqual([expect.objectContaining({ number: Number(receipt.blockNumber), hash: receipt.blockHash, webhookId: webhook!.id })]);
  const notified = sqs.commandCalls(SendMessageBatchCommand).flatMap((call) => call.args[0].input.Entries!.map((entry) => JSON.parse(entry.MessageBody!)));
  expect(notified).toEqual([expect.objectContaining({ webhookId: sound!.id })]);
  expect((await getCheckpoint('43114'))!.number).toBeGreaterThanOrEqual(Number(receipt.blockNumber));
  const metrics = stdout.text().split('\n').filter((line) => line.includes('"_aws"')).map((line) => JSON.parse(line));
  expect(metrics.filter((metric) => metric.ChainBlocksQuarantined !== undefined)).toEqual([expect.objectContaining({ chainId: '43114', ChainBlocksQuarantined: 1 })]);

  const number = Number(receipt.blockNumber);
  const operator = (event: { retake?: unknown }) => quarantinedBlocksHandler(event, {} as Context);
  expect(await operator({})).toEqual({ quarantined: [expect.objectContaining({ number, hash: receipt.blockHash, reason: expect.stringMatching(/^ValidationException/) })] });
  await expect(operator({ retake: 'latest' })).rejects.toThrow('retake must be a block number, got "latest"');
  await repair();
  sqs.reset();
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  expect(await operator({ retake: number })).toEqual({ retaken: { number, hash: receipt.blockHash, notifications: 1 } });
  const queued = sqs.commandCalls(SendMessageBatchCommand).flatMap((call) => call.args[0].input.Entries!.map((entry) => JSON.parse(entry.MessageBody!)));
  expect(queued).toEqual([expect.objectContaining({ webhookId: webhook!.id })]);
  expect(await operator({})).toEqual({ quarantined: [] });
}, 40_000);

test('transactions notified without the internal transactions the node could not trace are counted in the ChainTracesOmitted metric', async () => {
  // A node whose traces all fail, whole block or one transaction at a time.
  const failing = await startRpcProxy(chain.rpcUrl(), {
    answer: (call, fromNode) => (/^(trace_|debug_trace)/.test(call.method) && call.params?.[0] !== '0x0' ? { jsonrpc: '2.0', id: call.id, error: { code: -32000, message: 'execution timeout' } } : fromNode),
  });
  secrets.on(GetSecretValueCommand, { SecretId: SECRET_ARN }).callsFake(() => ({ SecretString: failing.url }));
  try {
    const to = randomAddress();
    await createWebhook(randomAccount(), createWebhookBody.parse(webhookInput({ chainId: '43114', metadata: { addresses: [to] }, includeInternalTxs: true })));
    // A cold start: the chain's URL is read from its secret once per process.
    let coldHandler = handler;
    await jest.isolateModulesAsync(async () => {
      coldHandler = (await import('../../functions/follow-chain')).handler;
    });
    const stdout = captureStdout();
    const running = coldHandler({}, { getRemainingTimeInMillis: () => 9_000 } as unknown as Context).finally(stdout.restore);
    while (!(await getCheckpoint('43114'))) await new Promise((resolve) => setTimeout(resolve, 50));
    const receipt = await chain.send({ from: await chain.fundedAddress(), to, value: 1n });
    await running;
    expect((await getCheckpoint('43114'))!.number).toBeGreaterThanOrEqual(Number(receipt.blockNumber));
    const metrics = stdout.text().split('\n').filter((line) => line.includes('"_aws"')).map((line) => JSON.parse(line));
    expect(metrics.filter((metric) => metric.ChainTracesOmitted !== undefined)).toEqual([expect.objectContaining({ chainId: '43114', ChainTracesOmitted: 1 })]);
  } finally {
    await failing.close();
  }
}, 30_000);
