import { createHash, randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { consumeDeliveries } from '../../lib/deliveries/consumer';
import { NO_QUEUE, type QueueRecord, type QueueSender, type QueuedDelivery } from '../../lib/deliveries/queue';
import type { MessageRef } from '../../lib/store/messages';

/** A delivery as a record of Lambda's SQS event: what the consumer is handed on AWS. */
export function queueRecordOf(delivery: MessageRef & Partial<QueuedDelivery>, receiveCount = 1): QueueRecord {
  const { account, webhookId, messageId, at = Date.now(), deferrals, origin } = delivery;
  const body = JSON.stringify({ account, webhookId, messageId, at, ...(deferrals ? { deferrals } : {}), ...(origin ? { origin } : {}) });
  return {
    messageId: randomUUID(),
    receiptHandle: randomUUID(),
    body,
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: String(Date.now()),
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
      MessageGroupId: account,
    },
    messageAttributes: {},
    md5OfBody: createHash('md5').update(body).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:deliveries',
    awsRegion: 'us-east-1',
  };
}

const silent = new Logger({ logLevel: 'SILENT' });

/** The messages handed to the consumer at once, as one batch; what it queues goes to `queue` (none by default: the test drives every attempt). */
export async function deliverNow(refs: MessageRef | MessageRef[], queue: QueueSender = NO_QUEUE) {
  return consumeDeliveries((Array.isArray(refs) ? refs : [refs]).map((ref) => queueRecordOf(ref)), { queue, log: silent });
}
