import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import type { Context, SQSEvent } from 'aws-lambda';
import { handler as dispatch } from '../../functions/dispatch-deliveries';
import { handler as sendTest } from '../../functions/send-test-notification';
import { handler as sweep } from '../../functions/sweep-deliveries';
import { readRuntimeConfig } from '../../lib/config/runtime';
import { deliveryQueueSender } from '../../lib/deliveries/sqs-queue';
import { getMessage } from '../../lib/store/messages';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { useEmbeddedStore } from '../support/embedded-store';
import { apiEvent, randomAccount, randomAddress, webhookInput } from '../support/factories';
import { startReceiver, type Receiver } from '../support/receiver';

const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/webhooks-dev-deliveries';
useEmbeddedStore({ DELIVERY_QUEUE_URL: QUEUE_URL, DELIVERY_RETRY_SCHEDULE: '30,3600', DELIVERY_SWEEP_GRACE_SECONDS: '120' });
const sqs = mockClient(SQSClient);
const context = { getRemainingTimeInMillis: () => 60_000 } as unknown as Context;

let receiver: Receiver;
let failing = false;
beforeAll(async () => {
  receiver = await startReceiver(() => (failing ? { status: 500 } : { status: 200 }));
});
afterAll(async () => {
  await receiver.close();
});
beforeEach(() => {
  sqs.reset();
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  failing = false;
});

/** What was sent to the queue: each entry's body and delay. */
const queued = () =>
  sqs.commandCalls(SendMessageBatchCommand).flatMap((call) => {
    expect(call.args[0].input.QueueUrl).toBe(QUEUE_URL);
    return call.args[0].input.Entries!.map((entry) => ({ ...JSON.parse(entry.MessageBody!), delay: entry.DelaySeconds }));
  });

const sqsEvent = (bodies: unknown[]): SQSEvent =>
  ({ Records: bodies.map((body, index) => ({ messageId: `m-${index}`, body: typeof body === 'string' ? body : JSON.stringify(body) })) }) as unknown as SQSEvent;

async function testNotification() {
  const account = randomAccount();
  const webhook = await createWebhook(account, webhookInput({ url: receiver.url, metadata: { addresses: [randomAddress()] } }) as never);
  const response = await sendTest(apiEvent({ account, method: 'POST', pathParameters: { id: webhook.id } }), context);
  expect(response.statusCode).toBe(202);
  const { messageId } = JSON.parse(response.body);
  return { account, webhookId: webhook.id, messageId: messageId as string };
}

describe('on AWS', () => {
  it('a recorded message is queued to SQS at once; the dispatcher function delivers it', async () => {
    const ref = await testNotification();
    const [entry] = queued();
    expect(entry).toMatchObject({ ...ref, delay: 0 });
    const result = await dispatch(sqsEvent([entry]), context);
    expect(result).toEqual({ batchItemFailures: [] });
    expect(receiver.requests.filter((request) => request.body.includes(ref.messageId))).toHaveLength(1);
    expect((await getMessage(ref))!.status).toBe('succeeded');
  });

  it('a failed attempt is queued again with the delay of its retry', async () => {
    failing = true;
    const ref = await testNotification();
    const [entry] = queued();
    sqs.resetHistory();
    await dispatch(sqsEvent([entry]), context);
    const [retry] = queued();
    expect(retry).toMatchObject(ref);
    expect(retry.delay).toBeGreaterThanOrEqual(27);
    expect(retry.delay).toBeLessThanOrEqual(33);

    // Delivered early (as the sweep or a duplicate would): not due, so queued again for its time.
    sqs.resetHistory();
    await dispatch(sqsEvent([retry]), context);
    expect(queued()).toEqual([expect.objectContaining({ ...ref, delay: expect.any(Number) })]);
    expect(receiver.requests.filter((request) => request.body.includes(ref.messageId))).toHaveLength(1);
  });

  it("leaves a retry beyond SQS's longest delay (15 minutes) to the sweep", async () => {
    await deliveryQueueSender().send([{ account: 'a', webhookId: 'w', messageId: 'm', at: Date.now() + 3_600_000 }]);
    expect(queued()).toEqual([]);
  });

  it('reports a queue message it cannot read as a batch item failure: SQS delivers it again, then to the dead-letter queue', async () => {
    const ref = await testNotification();
    const [entry] = queued();
    const result = await dispatch(sqsEvent(['not json', entry, { account: 'a' }]), context);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'm-0' }, { itemIdentifier: 'm-2' }]);
    expect((await getMessage(ref))!.status).toBe('succeeded');
  });

  it("sends a message to SQS in its account's group (a fair queue)", async () => {
    await testNotification();
    const entries = sqs.commandCalls(SendMessageBatchCommand).flatMap((call) => call.args[0].input.Entries!);
    expect(entries).toHaveLength(1);
    expect(entries[0]!.MessageGroupId).toBe(JSON.parse(entries[0]!.MessageBody!).account);
  });

  it('the sweep function queues what is due and no queue message brought', async () => {
    const ref = await testNotification();
    sqs.resetHistory();
    // Not yet: the queue message has its 120 s.
    await sweep({}, context);
    expect(queued().filter((entry) => entry.messageId === ref.messageId)).toEqual([]);
    const later = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 121_000);
    try {
      await sweep({}, context);
    } finally {
      later.mockRestore();
    }
    expect(queued().filter((entry) => entry.messageId === ref.messageId)).toHaveLength(1);
  });
});

it('never allows loopback targets on Lambda, nor in production', () => {
  expect(readRuntimeConfig({ STAGE: 'dev' }).loopbackTargets).toEqual({ servicePorts: [] });
  expect(readRuntimeConfig({ STAGE: 'dev', AWS_LAMBDA_FUNCTION_NAME: 'webhooks-dev-dispatch' }).loopbackTargets).toBeUndefined();
  expect(readRuntimeConfig({ STAGE: 'prod', LOOPBACK_TARGET_PORTS: '4000' }).loopbackTargets).toBeUndefined();
});

it("reads the service's own ports and the loopback ports allowed, and refuses a list that is not ports", () => {
  expect(readRuntimeConfig({ STAGE: 'local', SERVICE_PORTS: '3000,8000', LOOPBACK_TARGET_PORTS: ' 4000, 4001' }).loopbackTargets).toEqual({
    servicePorts: [3000, 8000],
    allowedPorts: [4000, 4001],
  });
  expect(() => readRuntimeConfig({ STAGE: 'local', LOOPBACK_TARGET_PORTS: '4000,http' })).toThrow(
    "LOOPBACK_TARGET_PORTS must be comma-separated port numbers from 1 to 65535 (e.g. \"4000,4001\"), got '4000,http'",
  );
  expect(() => readRuntimeConfig({ STAGE: 'local', LOOPBACK_TARGET_PORTS: '70000' })).toThrow(/LOOPBACK_TARGET_PORTS must be/);
});
