import {
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readRuntimeConfig } from '../../../lib/config/runtime';
import type { QueueRecord, QueuedDelivery } from '../../../lib/deliveries/queue';
import { createDeliveryQueueSender, SqsDeliveryQueue } from '../../../lib/deliveries/sqs-queue';
import { logger } from '../../../lib/logger';

const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/webhooks-dev-deliveries';
const sqs = mockClient(SQSClient);
const queue = new SqsDeliveryQueue(new SQSClient({ region: 'us-east-1' }), QUEUE_URL);

const delivery = (account: string, at: number, index = 0): QueuedDelivery => ({ account, webhookId: `wh_${index}`, messageId: `msg_${index}`, at });
const sentEntries = () => sqs.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input);
const record = (receiptHandle: string) => ({ receiptHandle }) as QueueRecord;

let warn: jest.SpyInstance;
beforeEach(() => {
  sqs.reset();
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  sqs.on(DeleteMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  warn = jest.spyOn(logger, 'warn').mockImplementation(() => {});
});
afterEach(() => warn.mockRestore());

describe('SqsDeliveryQueue.send', () => {
  it("puts every entry in its account's group, delayed until its time (rounded up, at most 900 s), in batches of 10; later ones are left to the sweep", async () => {
    const now = Date.now();
    const deliveries = [
      ...Array.from({ length: 11 }, (_, index) => delivery('acct_a', now - 5_000, index)),
      delivery('acct_b', now + 1_500, 11),
      delivery('acct_b', now + 899_000, 12),
      delivery('acct_c', now + 901_000, 13),
      delivery('acct_c', now + 3_600_000, 14),
    ];
    await queue.send(deliveries);

    const batches = sentEntries();
    expect(batches.map((batch) => batch.Entries!.length)).toEqual([10, 3]);
    const entries = batches.flatMap((batch) => {
      expect(batch.QueueUrl).toBe(QUEUE_URL);
      return batch.Entries!;
    });
    for (const entry of entries) expect(entry.MessageGroupId).toBe(JSON.parse(entry.MessageBody!).account);
    expect(entries.map((entry) => [JSON.parse(entry.MessageBody!).messageId, entry.DelaySeconds])).toEqual([
      ...Array.from({ length: 11 }, (_, index) => [`msg_${index}`, 0]),
      ['msg_11', 2],
      ['msg_12', 899],
    ]);
    expect(new Set(batches.map((batch) => batch.Entries!.map((entry) => entry.Id).join()))).toEqual(
      new Set(['0,1,2,3,4,5,6,7,8,9', '0,1,2']),
    );
    expect(warn).not.toHaveBeenCalled();
  });

  it('logs the entries SQS refuses and a send that throws, with their count and codes and no body, without throwing', async () => {
    sqs
      .on(SendMessageBatchCommand)
      .resolvesOnce({ Successful: [], Failed: [{ Id: '3', Code: 'InternalError', SenderFault: false }] })
      .rejectsOnce(Object.assign(new Error('throttled'), { name: 'RequestThrottled' }));
    const now = Date.now();
    await expect(queue.send(Array.from({ length: 15 }, (_, index) => delivery('acct_secretive', now, index)))).resolves.toBeUndefined();

    expect(warn).toHaveBeenCalledTimes(1);
    const [, details] = warn.mock.calls[0];
    expect(details).toEqual({ failed: 6, codes: expect.arrayContaining(['InternalError', 'RequestThrottled']) });
    expect(JSON.stringify(warn.mock.calls)).not.toContain('msg_');
  });

  it('sends nothing for nothing due within 900 s', async () => {
    await queue.send([delivery('acct_a', Date.now() + 3_600_000)]);
    expect(sentEntries()).toEqual([]);
  });
});

describe('SqsDeliveryQueue.receive', () => {
  it("long-polls for at most 10 messages and gives them as Lambda's SQS records, with receive count and group", async () => {
    sqs.on(ReceiveMessageCommand).resolves({
      Messages: [
        {
          MessageId: 'm-1',
          ReceiptHandle: 'rh-1',
          Body: '{"account":"acct_a"}',
          MD5OfBody: 'md5',
          Attributes: {
            ApproximateReceiveCount: '3',
            SentTimestamp: '1700000000000',
            ApproximateFirstReceiveTimestamp: '1700000000500',
            MessageGroupId: 'acct_a',
            SenderId: 'AROAEXAMPLE:dispatcher',
          },
        },
      ],
    });
    const records = await queue.receive(25, 20);

    expect(sqs.commandCalls(ReceiveMessageCommand)[0]!.args[0].input).toEqual({
      QueueUrl: QUEUE_URL,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 20,
      MessageSystemAttributeNames: expect.arrayContaining(['ApproximateReceiveCount', 'MessageGroupId', 'SentTimestamp']),
    });
    expect(records).toEqual([
      {
        messageId: 'm-1',
        receiptHandle: 'rh-1',
        body: '{"account":"acct_a"}',
        md5OfBody: 'md5',
        attributes: {
          ApproximateReceiveCount: '3',
          SentTimestamp: '1700000000000',
          ApproximateFirstReceiveTimestamp: '1700000000500',
          MessageGroupId: 'acct_a',
          SenderId: 'AROAEXAMPLE:dispatcher',
        },
        messageAttributes: {},
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:webhooks-dev-deliveries',
        awsRegion: 'us-east-1',
      },
    ]);
  });

  it('gives no records when the wait ends with none', async () => {
    sqs.on(ReceiveMessageCommand).resolves({});
    await expect(queue.receive(10, 1)).resolves.toEqual([]);
  });
});

describe('SqsDeliveryQueue.changeVisibility and acknowledge', () => {
  it("changes a record's visibility by its receipt handle, in whole seconds", async () => {
    sqs.on(ChangeMessageVisibilityCommand).resolves({});
    await queue.changeVisibility(record('rh-7'), 12.2);
    expect(sqs.commandCalls(ChangeMessageVisibilityCommand)[0]!.args[0].input).toEqual({ QueueUrl: QUEUE_URL, ReceiptHandle: 'rh-7', VisibilityTimeout: 13 });
  });

  it('deletes records in batches of 10 by receipt handle, and logs the ones SQS fails to delete', async () => {
    sqs
      .on(DeleteMessageBatchCommand)
      .resolvesOnce({ Successful: [], Failed: [{ Id: '0', Code: 'ReceiptHandleIsInvalid', SenderFault: true }] })
      .resolves({ Successful: [], Failed: [] });
    await queue.acknowledge(Array.from({ length: 12 }, (_, index) => record(`rh-${index}`)));

    const batches = sqs.commandCalls(DeleteMessageBatchCommand).map((call) => call.args[0].input);
    expect(batches.map((batch) => batch.QueueUrl)).toEqual([QUEUE_URL, QUEUE_URL]);
    expect(batches.flatMap((batch) => batch.Entries!.map((entry) => entry.ReceiptHandle)).sort()).toEqual(
      Array.from({ length: 12 }, (_, index) => `rh-${index}`).sort(),
    );
    expect(batches.map((batch) => batch.Entries!.length).sort()).toEqual([10, 2]);
    expect(warn).toHaveBeenCalledWith(expect.any(String), { failed: 1 });
  });
});

describe('createDeliveryQueueSender', () => {
  it("sends to `npm start`'s local queue endpoint on loopback, signing with the embedded store's secret", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sqs-queue-'));
    const credentialFile = path.join(dir, 'store-credential');
    writeFileSync(credentialFile, 'store-secret\n');
    const localUrl = 'http://127.0.0.1:40123/000000000000/webhooks-deliveries';
    const sender = createDeliveryQueueSender(
      readRuntimeConfig({ DELIVERY_QUEUE_URL: localUrl, DYNAMODB_PORT: '40100', DYNAMODB_CREDENTIAL_FILE: credentialFile }),
    );

    expect(sender).toBeInstanceOf(SqsDeliveryQueue);
    const { client } = sender as SqsDeliveryQueue;
    const endpoint = await client.config.endpoint!();
    expect(endpoint).toMatchObject({ protocol: 'http:', hostname: '127.0.0.1', port: 40123 });
    await expect(client.config.credentials()).resolves.toMatchObject({ accessKeyId: 'local', secretAccessKey: 'store-secret' });
    expect(client.middlewareStack.identify().join()).not.toContain('loggerMiddleware');
  });

  it('signs with any credentials for a loopback queue without a credential file', async () => {
    const sender = createDeliveryQueueSender(readRuntimeConfig({ DELIVERY_QUEUE_URL: 'http://localhost:40123/000000000000/webhooks-deliveries' }));
    await expect((sender as SqsDeliveryQueue).client.config.credentials()).resolves.toMatchObject({ accessKeyId: 'local', secretAccessKey: 'local' });
  });

  it("uses the SDK's endpoint for the region for a queue on AWS", async () => {
    const sender = createDeliveryQueueSender(readRuntimeConfig({ DELIVERY_QUEUE_URL: QUEUE_URL, AWS_REGION: 'eu-west-1' }));
    const { client } = sender as SqsDeliveryQueue;
    expect(client.config.endpoint).toBeUndefined();
    await expect(client.config.region()).resolves.toBe('eu-west-1');
  });

  it('sends nothing without a queue URL (in-process unit tests), leaving messages to the sweep', async () => {
    const sender = createDeliveryQueueSender(readRuntimeConfig({}));
    await sender.send([delivery('acct_a', Date.now())]);
    expect(sender).not.toBeInstanceOf(SqsDeliveryQueue);
    expect(sentEntries()).toEqual([]);
  });
});
