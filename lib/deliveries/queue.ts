import type { SQSRecord } from 'aws-lambda';
import type { DeliverySettings } from '../config/stages';
import { forEachChunk } from '../store/batch';
import { rescheduleMessage, type MessageRef, type MessageState, type RescheduleOptions } from '../store/messages';
import { sweepGraceMs } from './sweep';

/** A message to attempt at `at` (ms): what the delivery queue carries. */
export interface QueuedDelivery extends MessageRef {
  at: number;
  /** How many times in a row the consumer put it off without an attempt (its account's or host's slots full, its endpoint failing). */
  deferrals?: number;
  /**
   * Its webhook's endpoint (the URL's origin), when the producer knows it: the consumer reads its
   * health with the message. Without it, or once the URL has changed, it is read after the webhook.
   */
  origin?: string;
}

/**
 * One queue message as the consumer receives it: the record of Lambda's SQS event, on AWS and
 * locally alike. `attributes.ApproximateReceiveCount` counts its receives; `attributes.MessageGroupId`
 * is its account.
 */
export type QueueRecord = SQSRecord;

/** What producers need of the delivery queue. */
export interface QueueSender {
  /**
   * Queues each delivery in its account's group, delayed until its `at`: at most
   * MAX_QUEUE_DELAY_SECONDS (a later one is left to the sweep of the due-time index). Best effort by
   * design: what is not queued, the sweep takes up, so callers record a message before they queue it.
   */
  send(deliveries: QueuedDelivery[]): Promise<void>;
}

/**
 * The delivery queue: Amazon SQS (a fair queue) on AWS, LocalDeliveryQueue in `npm start`'s
 * background process, with the same semantics: delays, a visibility timeout, receive counts and a
 * dead-letter list after too many receives, and groups served fairly.
 */
export interface DeliveryQueue extends QueueSender {
  /**
   * Up to `max` records, waiting up to `waitSeconds` for one to be visible (long polling); each stays
   * hidden for the visibility timeout. Nothing, at once, once `signal` is aborted.
   */
  receive(max: number, waitSeconds: number, signal?: AbortSignal): Promise<QueueRecord[]>;
  /** Hides a received record for `seconds` from now (0: visible again at once). */
  changeVisibility(record: QueueRecord, seconds: number): Promise<void>;
  /** Deletes received records: done with. */
  acknowledge(records: QueueRecord[]): Promise<void>;
}

/** For in-process unit tests without a queue: nothing is queued, the sweep takes every message up. */
export const NO_QUEUE: QueueSender = { send: async () => undefined };

/** A queue message's body and its group: a delivery as SQS's SendMessageBatch entry carries it. */
export interface QueueEntry {
  body: string;
  group: string;
  /** SQS takes whole seconds: the delay rounded up. */
  delaySeconds: number;
  /** When the delivery is due (ms), which the local queue keeps to exactly. */
  at: number;
}

/** The entries to send for deliveries at `now`: those due within the queue's longest delay, each in its account's group. */
export function queueEntries(deliveries: QueuedDelivery[], now: number): QueueEntry[] {
  return deliveries
    .filter((delivery) => delivery.at - now <= MAX_QUEUE_DELAY_SECONDS * 1000)
    .map(({ account, webhookId, messageId, at, deferrals, origin }) => ({
      body: JSON.stringify({ account, webhookId, messageId, at, ...(deferrals ? { deferrals } : {}), ...(origin ? { origin } : {}) }),
      group: account,
      delaySeconds: Math.max(0, Math.min(MAX_QUEUE_DELAY_SECONDS, Math.ceil((at - now) / 1000))),
      at,
    }));
}

/** SQS's longest delay: later attempts are left to the sweep of the due-time index. */
export const MAX_QUEUE_DELAY_SECONDS = 900;
/** Records a consumer is handed at once (the event source mapping's batch size, the local loop's receive). */
export const CONSUMER_BATCH_SIZE = 10;

/**
 * Batches consumed at once (the event source mapping's maximum concurrency, the local loop's
 * pollers): enough for `total` attempts, and beside them for one account's slow attempts, each of
 * which holds its batch until it ends.
 */
export const consumerBatches = ({ total, perAccount }: DeliverySettings['concurrency']) => Math.ceil(total / CONSUMER_BATCH_SIZE) + perAccount;

/** Receives of a queue message before it is dead-lettered (its message stays in the table, for the sweep). */
export const MAX_QUEUE_RECEIVES = 5;
/** How long the consumer of a batch may take: its attempts' timeout, and the reads and writes around them. */
export const consumerTimeoutSeconds = (attemptTimeoutSeconds: number) => attemptTimeoutSeconds + 20;
/**
 * How long a received record stays hidden: six times its consumer's timeout, Lambda's guidance for an
 * SQS source, so that a batch retried after a throttle is not received again meanwhile.
 */
export const queueVisibilitySeconds = (attemptTimeoutSeconds: number) => 6 * consumerTimeoutSeconds(attemptTimeoutSeconds);

/** How a message is brought back to an attempt: whether it is a manual one, and what the message must still be as read. */
export type Requeue = Pick<RescheduleOptions, 'manual' | 'seenStatus' | 'seenNextAttemptAt'>;

const REQUEUE_PARALLEL = 16;

/**
 * Schedules each message's next attempt for now and queues it, unless an attempt holds it or it is
 * no longer as `how` says it was read. Returns the messages it queued.
 */
export async function queueAgainNow<M extends MessageState>(messages: M[], how: (message: M) => Requeue, queue: QueueSender): Promise<M[]> {
  const now = Date.now();
  const sweepAt = now + sweepGraceMs();
  const requeued: M[] = [];
  await forEachChunk(messages, 1, REQUEUE_PARALLEL, async ([message]) => {
    if (await rescheduleMessage(message!, { at: now, sweepAt, now, ...how(message!) })) requeued.push(message!);
  });
  await queue.send(requeued.map(({ account, webhookId, messageId }) => ({ account, webhookId, messageId, at: now })));
  return requeued;
}

/** A queue message's body as the consumer receives it; throws for one this service did not write. */
export function parseQueuedDelivery(body: string): QueuedDelivery {
  const { account, webhookId, messageId, at, deferrals, origin } = JSON.parse(body) as Partial<QueuedDelivery>;
  if (typeof account !== 'string' || typeof webhookId !== 'string' || typeof messageId !== 'string' || typeof at !== 'number') {
    throw new Error('not a queued delivery');
  }
  return {
    account,
    webhookId,
    messageId,
    at,
    ...(typeof deferrals === 'number' && deferrals > 0 ? { deferrals } : {}),
    ...(typeof origin === 'string' ? { origin } : {}),
  };
}
