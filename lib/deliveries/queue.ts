import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { runtimeConfig } from '../config/runtime';
import { logger } from '../logger';
import { inChunks } from '../store/batch';
import { rescheduleMessage, type Message, type MessageRef, type RescheduleOptions } from '../store/messages';
import { sweepGraceMs } from './sweep';

/** A message to attempt at `at` (ms): what the delivery queue carries. */
export interface QueuedDelivery extends MessageRef {
  at: number;
}

/** SQS's longest delay: later attempts are left to the sweep of the due-time index. */
export const MAX_QUEUE_DELAY_SECONDS = 900;
const SQS_BATCH = 10;

type LocalConsumer = (deliveries: QueuedDelivery[]) => void;
let localConsumer: LocalConsumer | undefined;
let sqs: SQSClient | undefined;

/**
 * Hands messages to the dispatcher: through the SQS queue on AWS, to the dispatcher in this process
 * locally. Best effort by design: a message whose queue message is lost is taken up by the sweep of
 * the due-time index, so callers record the message before they queue it.
 */
export async function queueDeliveries(deliveries: QueuedDelivery[]): Promise<void> {
  const queueUrl = runtimeConfig().deliveryQueueUrl;
  if (!queueUrl) {
    localConsumer?.(deliveries);
    return;
  }
  const now = Date.now();
  const soon = deliveries.filter((delivery) => delivery.at - now <= MAX_QUEUE_DELAY_SECONDS * 1000);
  sqs ??= new SQSClient({ region: runtimeConfig().region });
  for (let start = 0; start < soon.length; start += SQS_BATCH) {
    const batch = soon.slice(start, start + SQS_BATCH);
    const { Failed } = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: batch.map(({ account, webhookId, messageId, at }, index) => ({
          Id: String(index),
          MessageBody: JSON.stringify({ account, webhookId, messageId, at }),
          DelaySeconds: Math.max(0, Math.min(MAX_QUEUE_DELAY_SECONDS, Math.ceil((at - now) / 1000))),
        })),
      }),
    );
    if (Failed?.length) logger.warn('messages not queued; the sweep takes them up', { failed: Failed.length, code: Failed[0]!.Code });
  }
}

/** How a message is brought back to an attempt: whether it is a manual one, and what the message must still be as read. */
export type Requeue = Pick<RescheduleOptions, 'manual' | 'seenStatus' | 'seenNextAttemptAt'>;

const REQUEUE_PARALLEL = 16;

/**
 * Schedules each message's next attempt for now and queues it, unless an attempt holds it or it is
 * no longer as `how` says it was read. Returns the messages it queued.
 */
export async function queueAgainNow(messages: Message[], how: (message: Message) => Requeue): Promise<Message[]> {
  const now = Date.now();
  const sweepAt = now + sweepGraceMs();
  const requeued: Message[] = [];
  await inChunks(messages, 1, REQUEUE_PARALLEL, async ([message]) => {
    if (await rescheduleMessage(message!, { at: now, sweepAt, now, ...how(message!) })) requeued.push(message!);
  });
  await queueDeliveries(requeued.map(({ account, webhookId, messageId }) => ({ account, webhookId, messageId, at: now })));
  return requeued;
}

/** Locally: where queued messages go (the dispatcher started by `npm start`). Returns the way to stop. */
export function consumeQueueLocally(consumer: LocalConsumer): () => void {
  localConsumer = consumer;
  return () => {
    if (localConsumer === consumer) localConsumer = undefined;
  };
}

/** The queue message's body as the dispatcher function receives it; throws for one this service did not write. */
export function parseQueuedDelivery(body: string): QueuedDelivery {
  const { account, webhookId, messageId, at } = JSON.parse(body) as Partial<QueuedDelivery>;
  if (typeof account !== 'string' || typeof webhookId !== 'string' || typeof messageId !== 'string' || typeof at !== 'number') {
    throw new Error('not a queued delivery');
  }
  return { account, webhookId, messageId, at };
}
