import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { deliverQueued } from '../lib/deliveries/deliver';
import { parseQueuedDelivery } from '../lib/deliveries/queue';
import { lambdaContextInLogs, logger } from '../lib/logger';

/**
 * The delivery queue's consumer: each queued message to its attempt, all of a batch at once. A
 * message whose attempt could not be recorded is reported as a batch item failure, so that SQS
 * delivers it again (and after maxReceiveCount, moves it to the dead-letter queue).
 */
export const handler = middy(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const results = await Promise.allSettled(event.Records.map(async (record) => deliverQueued(parseQueuedDelivery(record.body))));
  const batchItemFailures = event.Records.flatMap((record, index) => {
    const result = results[index]!;
    if (result.status === 'fulfilled') return [];
    logger.warn('delivery failed in the store; SQS redelivers it', { queueMessageId: record.messageId, error: (result.reason as Error).message });
    return [{ itemIdentifier: record.messageId }];
  });
  return { batchItemFailures };
}).use(lambdaContextInLogs());
