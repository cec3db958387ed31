import { Logger } from '@aws-lambda-powertools/logger';
import { LocalDeliveryQueue } from '../../../infra/local/local-queue';
import { consumeDeliveries } from '../../../lib/deliveries/consumer';
import { recordNotifications } from '../../../lib/deliveries/messages';
import type { QueuedDelivery, QueueRecord } from '../../../lib/deliveries/queue';
import * as messages from '../../../lib/store/messages';
import { getMessage } from '../../../lib/store/messages';
import { createWebhook } from '../../../lib/webhooks/webhooks';
import { originOf } from '../../../lib/store/endpoint-health';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../../support/factories';
import { startReceiver, type Receiver } from '../../support/receiver';

// The consumer's contract against the local queue, as the local loop drives it; the dispatcher
// function's side (SQS's request shapes) is test/functions/deliveries.test.ts, on a mocked SQS client.
useEmbeddedStore({ DELIVERY_RETRY_SCHEDULE: '30', DELIVERY_TIMEOUT_SECONDS: '2', DELIVERY_CONCURRENCY_PER_ACCOUNT: '1' });
const log = new Logger({ logLevel: 'SILENT' });

let receiver: Receiver;
let answer = 200;
const queues: LocalDeliveryQueue[] = [];
beforeAll(async () => {
  receiver = await startReceiver(() => ({ status: answer }));
});
afterEach(() => {
  answer = 200;
  for (const queue of queues.splice(0)) queue.close();
});
afterAll(async () => {
  await receiver.close();
});

function newQueue() {
  const queue = new LocalDeliveryQueue({ visibilityTimeoutSeconds: 1, maxReceiveCount: 2 });
  queues.push(queue);
  return queue;
}

async function recorded(queue: LocalDeliveryQueue, count = 1) {
  const account = randomAccount();
  const webhook = await createWebhook(account, webhookInput({ url: receiver.url, metadata: { addresses: [randomAddress()] } }) as never);
  const ids = await recordNotifications(account, webhook.id, Array.from({ length: count }, () => ({ eventType: 'address_activity', event: {} })), queue);
  return ids.map((messageId) => ({ account, webhookId: webhook.id, messageId }));
}

/** One turn of the local loop: a batch received, consumed, and what was not returned acknowledged. */
async function turn(queue: LocalDeliveryQueue): Promise<{ records: QueueRecord[]; failed: string[] }> {
  const records = await queue.receive(10, 0);
  const { batchItemFailures } = await consumeDeliveries(records, { queue, log });
  const failed = batchItemFailures.map(({ itemIdentifier }) => itemIdentifier);
  await queue.acknowledge(records.filter((record) => !failed.includes(record.messageId)));
  return { records, failed };
}

const bodyOf = (record: QueueRecord) => JSON.parse(record.body) as QueuedDelivery;

it('delivers what it receives and returns nothing to retry: the queue is empty', async () => {
  const queue = newQueue();
  const [ref] = await recorded(queue);
  expect(await turn(queue)).toMatchObject({ failed: [] });
  expect((await getMessage(ref!))!.status).toBe('succeeded');
  expect(queue.stats()).toMatchObject({ visible: 0, delayed: 0, inFlight: 0 });
});

it("queues a failed attempt's retry with the schedule's delay", async () => {
  answer = 500;
  const queue = newQueue();
  const [ref] = await recorded(queue);
  await turn(queue);
  expect(queue.stats()).toMatchObject({ visible: 0, delayed: 1, inFlight: 0 });
  const message = (await getMessage(ref!))!;
  expect(message).toMatchObject({ status: 'pending', attempts: 1 });
  expect(message.nextAttemptAt! - Date.now()).toBeGreaterThan(20_000);
});

it('puts off what admission refuses, unattempted, as a new queue message counting its put-offs', async () => {
  const hang = await startReceiver(() => 'hang');
  try {
    const queue = newQueue();
    const account = randomAccount();
    const webhook = await createWebhook(account, webhookInput({ url: hang.url, metadata: { addresses: [randomAddress()] } }) as never);
    const ids = await recordNotifications(account, webhook.id, [{ eventType: 'address_activity', event: {} }, { eventType: 'address_activity', event: {} }], queue);
    // One slot for the account: one attempt hangs, the other message is put off.
    await turn(queue);
    expect(hang.requests).toHaveLength(1);
    const messages = await Promise.all(ids.map((messageId) => getMessage({ account, webhookId: webhook.id, messageId })));
    expect(messages.map((message) => message!.attempts).sort()).toEqual([0, 1]);
    expect(messages.every((message) => message!.status === 'pending')).toBe(true);
    // Back within the put-off delay (the attempt's timeout, ±50 %); the timed-out one waits for its retry in 30 s.
    const unattempted = messages.find((message) => message!.attempts === 0)!;
    const back = await queue.receive(10, 4);
    expect(back.map(bodyOf)).toEqual([{ account, webhookId: webhook.id, messageId: unattempted.messageId, at: expect.any(Number), deferrals: 1, origin: originOf(webhook.url) }]);
  } finally {
    await hang.close();
  }
});

it('returns a record that is not a delivery, and delivers the rest of its batch', async () => {
  const queue = newQueue();
  const [ref] = await recorded(queue);
  const records = await queue.receive(10, 0);
  const bogus = { ...records[0]!, messageId: 'bogus', body: '{"not":"a delivery"}' };
  const { batchItemFailures } = await consumeDeliveries([bogus, ...records], { queue, log });
  expect(batchItemFailures).toEqual([{ itemIdentifier: 'bogus' }]);
  expect((await getMessage(ref!))!.status).toBe('succeeded');
});

it('returns a record whose message cannot be read; it comes back after its visibility timeout, and is dead-lettered after the last receive', async () => {
  const queue = newQueue();
  const [ref] = await recorded(queue);
  // A store fault for this record alone (the embedded store cannot fail one request on demand).
  const read = jest.spyOn(messages, 'getMessageState').mockRejectedValue(Object.assign(new Error('store unavailable'), { name: 'ServiceUnavailable' }));
  try {
    const first = await turn(queue);
    expect(first.failed).toEqual([first.records[0]!.messageId]);
    expect(queue.stats()).toMatchObject({ inFlight: 1 });
    const again = await queue.receive(10, 2);
    expect(again.map(bodyOf)).toEqual([expect.objectContaining(ref)]);
    expect(again[0]!.attributes.ApproximateReceiveCount).toBe('2');
    // Not acknowledged: after its visibility timeout the queue moves it to the dead letters (maxReceiveCount 2).
    expect(await queue.receive(10, 2)).toEqual([]);
    expect(queue.deadLetters().map((letter) => JSON.parse(letter.body))).toEqual([expect.objectContaining(ref)]);
  } finally {
    read.mockRestore();
  }
  // The message itself stays pending in the table, where the sweep takes it up.
  expect((await getMessage(ref!))!.status).toBe('pending');
});
