import { createHash } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { QueuedDelivery, QueueRecord } from '../../lib/deliveries/queue';
import { LocalDeliveryQueue, type LocalDeliveryQueueOptions } from '../../infra/local/local-queue';

const queues: LocalDeliveryQueue[] = [];
afterEach(() => {
  for (const queue of queues.splice(0)) queue.close();
});

function queueWith(options: Partial<LocalDeliveryQueueOptions> = {}): LocalDeliveryQueue {
  const queue = new LocalDeliveryQueue({ visibilityTimeoutSeconds: 1, maxReceiveCount: 5, ...options });
  queues.push(queue);
  return queue;
}

/** A logger that keeps its warnings, for the queue's `log`. */
function warningsLog() {
  const warnings: [string, Record<string, unknown>][] = [];
  const log = { warn: (message: string, fields: Record<string, unknown>) => warnings.push([message, fields]) } as unknown as Logger;
  return { log, warnings };
}

/** `count` deliveries of `account`, due `inMs` from now, numbered from `from`. */
const deliveries = (account: string, count: number, { inMs = 0, from = 0 } = {}): QueuedDelivery[] =>
  Array.from({ length: count }, (_, index) => ({ account, webhookId: `wh-${account}`, messageId: `${account}-${from + index}`, at: Date.now() + inMs }));

const idsOf = (records: QueueRecord[]) => records.map((record) => (JSON.parse(record.body) as QueuedDelivery).messageId);
const groupsOf = (records: QueueRecord[]) => records.map((record) => record.attributes.MessageGroupId);

describe('LocalDeliveryQueue', () => {
  it('gives a sent message at once as a record of the shape of Lambda SQS event', async () => {
    const queue = queueWith();
    const [delivery] = deliveries('acct-a', 1);
    await queue.send([delivery!]);
    const [record, ...rest] = await queue.receive(10, 0);
    expect(rest).toEqual([]);
    expect(JSON.parse(record!.body)).toEqual(delivery);
    expect(record).toMatchObject({
      messageId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      receiptHandle: expect.any(String),
      md5OfBody: createHash('md5').update(record!.body).digest('hex'),
      messageAttributes: {},
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:local:000000000000:deliveries',
      awsRegion: 'local',
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: expect.stringMatching(/^\d+$/),
        ApproximateFirstReceiveTimestamp: expect.stringMatching(/^\d+$/),
        SenderId: 'local',
        MessageGroupId: 'acct-a',
      },
    });
  });

  it('holds a delayed message until its delay has passed, and a waiting receive gets it then', async () => {
    const queue = queueWith();
    await queue.send(deliveries('acct-a', 1, { inMs: 1000 }));
    expect(await queue.receive(10, 0)).toEqual([]);
    expect(queue.stats()).toMatchObject({ visible: 0, delayed: 1 });
    expect(idsOf(await queue.receive(10, 5))).toEqual(['acct-a-0']);
  });

  it('gives a received message again after its visibility timeout, with its receive count up and a new receipt handle', async () => {
    const queue = queueWith({ visibilityTimeoutSeconds: 1 });
    await queue.send(deliveries('acct-a', 1));
    const [first] = await queue.receive(10, 0);
    expect(await queue.receive(10, 0)).toEqual([]);
    expect(queue.stats()).toMatchObject({ visible: 0, inFlight: 1 });
    const [again] = await queue.receive(10, 5);
    expect(again!.messageId).toBe(first!.messageId);
    expect(again!.attributes.ApproximateReceiveCount).toBe('2');
    expect(again!.attributes.ApproximateFirstReceiveTimestamp).toBe(first!.attributes.ApproximateFirstReceiveTimestamp);
    expect(again!.receiptHandle).not.toBe(first!.receiptHandle);
  });

  it('deletes an acknowledged message: it never comes back', async () => {
    const queue = queueWith({ visibilityTimeoutSeconds: 1 });
    await queue.send(deliveries('acct-a', 2));
    const records = await queue.receive(10, 0);
    await queue.acknowledge(records);
    expect(await queue.receive(10, 2)).toEqual([]);
    expect(queue.stats()).toEqual({ visible: 0, delayed: 0, inFlight: 0, deadLettered: 0 });
  });

  it('ignores a receipt handle from before the latest receive, for acknowledge and changeVisibility', async () => {
    const queue = queueWith({ visibilityTimeoutSeconds: 1 });
    await queue.send(deliveries('acct-a', 1));
    const [stale] = await queue.receive(10, 0);
    const [current] = await queue.receive(10, 5);
    await queue.changeVisibility(stale!, 0);
    await queue.acknowledge([stale!]);
    expect(queue.stats()).toMatchObject({ visible: 0, inFlight: 1 });
    await queue.acknowledge([current!]);
    expect(queue.stats()).toMatchObject({ visible: 0, inFlight: 0 });
  });

  it('makes a message visible at once with changeVisibility 0, and hides it longer with more', async () => {
    const queue = queueWith({ visibilityTimeoutSeconds: 1 });
    await queue.send(deliveries('acct-a', 1));
    const [first] = await queue.receive(10, 0);
    await queue.changeVisibility(first!, 0);
    const [second] = await queue.receive(10, 0);
    expect(second!.attributes.ApproximateReceiveCount).toBe('2');
    await queue.changeVisibility(second!, 60);
    expect(await queue.receive(10, 2)).toEqual([]);
    expect(queue.stats()).toMatchObject({ inFlight: 1 });
  });

  it('moves a message received maxReceiveCount times to the dead-letter list instead of giving it again', async () => {
    const { log, warnings } = warningsLog();
    const queue = queueWith({ maxReceiveCount: 2, log });
    await queue.send(deliveries('acct-a', 1));
    for (let receive = 1; receive <= 2; receive += 1) {
      const [record] = await queue.receive(10, 0);
      expect(record!.attributes.ApproximateReceiveCount).toBe(String(receive));
      await queue.changeVisibility(record!, 0);
    }
    expect(await queue.receive(10, 0)).toEqual([]);
    const [deadLetter, ...others] = queue.deadLetters();
    expect(others).toEqual([]);
    expect(deadLetter).toMatchObject({ group: 'acct-a', receiveCount: 2 });
    expect(JSON.parse(deadLetter!.body)).toMatchObject({ messageId: 'acct-a-0' });
    expect(queue.stats()).toEqual({ visible: 0, delayed: 0, inFlight: 0, deadLettered: 1 });
    expect(warnings).toEqual([[expect.any(String), { account: 'acct-a', webhookId: 'wh-acct-a', messageId: 'acct-a-0', receiveCount: 2 }]]);
  });

  it('wakes a waiting receive as soon as a message is sent', async () => {
    const queue = queueWith();
    const waiting = queue.receive(10, 20);
    await queue.send(deliveries('acct-a', 1));
    expect(idsOf(await waiting)).toEqual(['acct-a-0']);
  });

  it('resolves a waiting receive with nothing after its wait', async () => {
    await expect(queueWith().receive(10, 1)).resolves.toEqual([]);
  });

  // Were a pending receive left to its wait, jest's 30 s timeout would end this test.
  it('resolves pending receives with nothing on close, and later ones too', async () => {
    const queue = queueWith();
    const waiting = queue.receive(10, 60);
    queue.close();
    await expect(waiting).resolves.toEqual([]);
    await queue.send(deliveries('acct-a', 1));
    await expect(queue.receive(10, 60)).resolves.toEqual([]);
  });


  // What lets the delivery loop stop at once rather than after its poll's wait.
  it('resolves a waiting receive with nothing when its signal is aborted, and leaves the message for the next', async () => {
    const queue = queueWith();
    const stopping = new AbortController();
    const listeners: string[] = [];
    const signal = stopping.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = (type: string, ...rest: any[]) => (listeners.push(type), add(type, ...(rest as [any])));
    signal.removeEventListener = (type: string, ...rest: any[]) => (listeners.splice(listeners.indexOf(type), 1), remove(type, ...(rest as [any])));
    // A receive that got its message stops listening.
    const served = queue.receive(10, 60, signal);
    await queue.send(deliveries('acct-a', 1));
    expect(idsOf(await served)).toEqual(['acct-a-0']);
    expect(listeners).toEqual([]);
    const waiting = queue.receive(10, 60, signal);
    stopping.abort();
    await expect(waiting).resolves.toEqual([]);
    expect(listeners).toEqual([]);
    await expect(queue.receive(10, 0, signal)).resolves.toEqual([]);
    await queue.send(deliveries('acct-b', 1));
    expect(idsOf(await queue.receive(10, 0))).toEqual(['acct-b-0']);
  });
  it('holds at most maxMessages, dropping the rest of a send without throwing', async () => {
    const { log, warnings } = warningsLog();
    const queue = queueWith({ maxMessages: 3, log });
    await queue.send(deliveries('acct-a', 5));
    expect(warnings).toEqual([[expect.any(String), expect.objectContaining({ dropped: 2 })]]);
    await queue.send(deliveries('acct-b', 1));
    expect(queue.stats()).toMatchObject({ visible: 3 });
    expect(idsOf(await queue.receive(10, 0))).toEqual(['acct-a-0', 'acct-a-1', 'acct-a-2']);
  });
});

describe('LocalDeliveryQueue serves groups fairly', () => {
  it("gives a quiet account's messages among the first, behind another account's backlog", async () => {
    const queue = queueWith({ maxMessages: 10_000 });
    await queue.send(deliveries('acct-a', 5_000));
    await queue.send(deliveries('acct-b', 5));
    const first = await queue.receive(10, 0);
    expect(idsOf(first).filter((id) => id.startsWith('acct-b'))).toEqual(['acct-b-0', 'acct-b-1', 'acct-b-2', 'acct-b-3', 'acct-b-4']);
  });

  it('serves first the account with fewer messages in flight', async () => {
    const queue = queueWith({ visibilityTimeoutSeconds: 60 });
    await queue.send(deliveries('acct-a', 100));
    expect(groupsOf(await queue.receive(50, 0))).toEqual(Array(50).fill('acct-a'));
    await queue.send(deliveries('acct-b', 3));
    const next = [...(await queue.receive(1, 0)), ...(await queue.receive(1, 0)), ...(await queue.receive(1, 0))];
    expect(idsOf(next)).toEqual(['acct-b-0', 'acct-b-1', 'acct-b-2']);
  });

  it('takes turns between accounts with as many messages in flight', async () => {
    const queue = queueWith({ visibilityTimeoutSeconds: 60 });
    await queue.send(deliveries('acct-a', 3));
    await queue.send(deliveries('acct-b', 3));
    const turns = [...(await queue.receive(1, 0)), ...(await queue.receive(1, 0)), ...(await queue.receive(1, 0)), ...(await queue.receive(1, 0))];
    expect(groupsOf(turns)).toEqual(['acct-a', 'acct-b', 'acct-a', 'acct-b']);
  });

  it('reaches each of 50 accounts within a few receives, beside one account holding 100 000 messages', async () => {
    const queue = queueWith({ visibilityTimeoutSeconds: 60 });
    await queue.send(deliveries('acct-big', 100_000));
    for (let account = 0; account < 50; account += 1) await queue.send(deliveries(`acct-${account}`, 2));
    const received: QueueRecord[] = [];
    for (let receive = 0; receive < 6; receive += 1) received.push(...(await queue.receive(10, 0)));
    expect(new Set(groupsOf(received)).size).toBe(51);
    expect(queue.stats()).toMatchObject({ visible: 100_000 + 100 - 60, inFlight: 60 });
  });
});
