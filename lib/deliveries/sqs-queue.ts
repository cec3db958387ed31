import {
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import type { SQSRecordAttributes } from 'aws-lambda';
import { isLoopbackHttpUrl, localServiceCredentials } from '../config/local-services';
import { runtimeConfig, type RuntimeConfig } from '../config/runtime';
import { logger } from '../logger';
import { forEachChunk } from '../store/batch';
import { NO_QUEUE, queueEntries, type DeliveryQueue, type QueueRecord, type QueuedDelivery, type QueueSender } from './queue';

/** SendMessageBatch, ReceiveMessage and DeleteMessageBatch take at most 10 messages. */
export const SQS_BATCH = 10;
const PARALLEL_BATCHES = 8;
/** What Lambda's SQS event carries in each record's `attributes`. */
const RECORD_ATTRIBUTES = ['ApproximateReceiveCount', 'SentTimestamp', 'ApproximateFirstReceiveTimestamp', 'MessageGroupId', 'SenderId'] as const;

/**
 * The delivery queue on Amazon SQS: a standard queue whose messages each carry their account as
 * MessageGroupId, which makes it a fair queue (an account with a backlog does not hold up the others'
 * messages). Its records have the shape of Lambda's SQS event, whoever receives them.
 */
export class SqsDeliveryQueue implements DeliveryQueue {
  private readonly source: { eventSourceARN: string; awsRegion: string };

  constructor(
    readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {
    this.source = queueSourceOf(queueUrl);
  }

  /** Best effort (see QueueSender): entries SQS refuses, or a send that throws, are logged, not thrown. */
  async send(deliveries: QueuedDelivery[]): Promise<void> {
    const entries = queueEntries(deliveries, Date.now());
    const unsent = { count: 0, codes: new Set<string>() };
    await forEachChunk(entries, SQS_BATCH, PARALLEL_BATCHES, async (chunk) => {
      try {
        const { Failed = [] } = await this.client.send(
          new SendMessageBatchCommand({
            QueueUrl: this.queueUrl,
            Entries: chunk.map((entry, index) => ({
              Id: String(index),
              MessageBody: entry.body,
              MessageGroupId: entry.group,
              DelaySeconds: entry.delaySeconds,
            })),
          }),
        );
        unsent.count += Failed.length;
        for (const { Code } of Failed) unsent.codes.add(Code ?? 'unknown');
      } catch (error) {
        unsent.count += chunk.length;
        unsent.codes.add((error as Error).name);
      }
    });
    if (unsent.count) logger.warn('messages not queued; the sweep takes them up', { failed: unsent.count, codes: [...unsent.codes] });
  }

  async receive(max: number, waitSeconds: number, signal?: AbortSignal): Promise<QueueRecord[]> {
    if (signal?.aborted) return [];
    try {
      const { Messages = [] } = await this.client.send(
        new ReceiveMessageCommand({
          QueueUrl: this.queueUrl,
          MaxNumberOfMessages: Math.max(1, Math.min(SQS_BATCH, max)),
          WaitTimeSeconds: waitSeconds,
          MessageSystemAttributeNames: [...RECORD_ATTRIBUTES],
        }),
        { abortSignal: signal },
      );
      return Messages.map((message) => this.recordOf(message));
    } catch (error) {
      if (signal?.aborted) return [];
      throw error;
    }
  }

  async changeVisibility(record: QueueRecord, seconds: number): Promise<void> {
    await this.client.send(
      new ChangeMessageVisibilityCommand({ QueueUrl: this.queueUrl, ReceiptHandle: record.receiptHandle, VisibilityTimeout: Math.max(0, Math.ceil(seconds)) }),
    );
  }

  /** A record SQS fails to delete is logged: it comes back after its visibility timeout, and its attempt is claimed in the table, so it is not made twice. */
  async acknowledge(records: QueueRecord[]): Promise<void> {
    let failed = 0;
    await forEachChunk(records, SQS_BATCH, PARALLEL_BATCHES, async (chunk) => {
      const { Failed = [] } = await this.client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
        }),
      );
      failed += Failed.length;
    });
    if (failed) logger.warn('queue messages not deleted; they come back after their visibility timeout', { failed });
  }

  private recordOf(message: Message): QueueRecord {
    const attributes = message.Attributes ?? {};
    return {
      messageId: message.MessageId!,
      receiptHandle: message.ReceiptHandle!,
      body: message.Body ?? '',
      attributes: Object.fromEntries(RECORD_ATTRIBUTES.flatMap((name) => (attributes[name] === undefined ? [] : [[name, attributes[name]]]))) as unknown as SQSRecordAttributes,
      messageAttributes: {},
      md5OfBody: message.MD5OfBody ?? '',
      eventSource: 'aws:sqs',
      ...this.source,
    };
  }
}

/** A queue's ARN and region from its URL (https://sqs.<region>.amazonaws.com/<account>/<name>), as Lambda's SQS event gives them. */
function queueSourceOf(queueUrl: string): { eventSourceARN: string; awsRegion: string } {
  const { hostname, pathname } = new URL(queueUrl);
  const [account = '', name = ''] = pathname.split('/').filter(Boolean);
  const awsRegion = /^sqs\.([a-z0-9-]+)\.amazonaws\.com/.exec(hostname)?.[1] ?? 'local';
  return { eventSourceARN: `arn:aws:sqs:${awsRegion}:${account}:${name}`, awsRegion };
}

let sender: QueueSender | undefined;

/** Where this process's API operations queue deliveries: one per process. Background work is handed its queue instead. */
export function deliveryQueueSender(): QueueSender {
  sender ??= createDeliveryQueueSender(runtimeConfig());
  return sender;
}

/**
 * SQS at DELIVERY_QUEUE_URL: on AWS, or `npm start`'s local queue endpoint on loopback (which speaks
 * SQS's protocol and checks requests' signatures with the embedded store's secret). Without a URL,
 * which only in-process unit tests run with, nothing is sent: messages are left to the sweep.
 */
export function createDeliveryQueueSender(config: RuntimeConfig): QueueSender {
  const { deliveryQueueUrl, region, dynamoDbCredentialFile } = config;
  if (!deliveryQueueUrl) return NO_QUEUE;
  const local = isLoopbackHttpUrl(deliveryQueueUrl);
  const client = new SQSClient({
    region,
    ...(local ? { endpoint: new URL(deliveryQueueUrl).origin, credentials: localServiceCredentials(dynamoDbCredentialFile) } : {}),
  });
  // It copies every input and output through the sensitive-data filter for a logger we never give it.
  client.middlewareStack.remove('loggerMiddleware');
  return new SqsDeliveryQueue(client, deliveryQueueUrl);
}
