import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { SQSBatchResponse } from 'aws-lambda';
import { logger } from '../logger';
import { coalescingReader, type ItemReader } from '../store/batch';
import { admitAttempt, refusedByFullPool, type Admission, type ConsumerAdmissions } from './admission';
import { attemptDelivery, deferDelivery, prepareDelivery, type Attempted, type PreparedAttempt } from './deliver';
import { CONSUMER_BATCH_SIZE, parseQueuedDelivery, type QueueRecord, type QueueSender, type QueuedDelivery } from './queue';
import { deliveryStats, type DeliveryStatsBuffer } from './stats';
import { sweepGraceMs } from './sweep';
import { resolveTarget, type ResolvedTarget } from './target-guard';

export interface ConsumerContext {
  /** Where messages are queued again: the next attempt of a schedule, a message put off, one early. */
  queue: QueueSender;
  /** This consumer process's admissions: the order of each account's, the pools found full a moment ago (admission.ts). */
  admissions?: ConsumerAdmissions;
  /**
   * Told of each record as soon as it is done with (`returned`: it is to be received again), before
   * the batch ends: a consumer that outlives its batch (the local loop) lets each record go at once,
   * not when the batch's slowest attempt ends.
   */
  settled?: (record: QueueRecord, returned: boolean) => void;
  log?: Logger;
  /** Where attempts are counted: the process's buffer unless given. */
  stats?: DeliveryStatsBuffer;
}

/**
 * The delivery queue's consumer, the same function on AWS (functions/dispatch-deliveries.ts, with the
 * batch SQS hands the dispatcher function) and in `npm start` (infra/local/delivery-loop.ts, with a
 * batch received from the local queue): each record to its attempt, all of a batch at once. An
 * attempt starts only if admission.ts admits it; a message refused is put off, none of its schedule
 * spent. Returns the records to receive again (SQS partial batch responses): those whose message
 * could not be read or recorded in the store. After the queue's MAX_QUEUE_RECEIVES they are
 * dead-lettered; their messages stay in the table, where the sweep of the due-time index takes them up.
 *
 * After the batch, the statistics' counts are written: those 10 s old or of an hour that has ended,
 * or, after a batch that was not full (little traffic, or the queue drained), all of them, so that a
 * dispatcher Lambda retired while idle has none left to lose.
 */
export async function consumeDeliveries(records: QueueRecord[], context: ConsumerContext): Promise<SQSBatchResponse> {
  const { stats = deliveryStats, log = logger } = context;
  // A processor holds the batch it processes: one per batch, since batches run side by side.
  const processor = new BatchProcessor(EventType.SQS);
  const read = coalescingReader();
  const deliver = async (record: QueueRecord) => {
    try {
      await deliverRecord(record, { ...context, stats }, read);
    } catch (error) {
      context.settled?.(record, true);
      throw error;
    }
    context.settled?.(record, false);
  };
  const response = await processPartialResponse({ Records: records }, deliver, processor, {
    throwOnFullBatchFailure: false,
  });
  await stats.flush(Date.now(), { all: records.length < CONSUMER_BATCH_SIZE, log });
  return response;
}

async function deliverRecord(record: QueueRecord, { queue, log = logger, stats, admissions }: ConsumerContext & { stats: DeliveryStatsBuffer }, read: ItemReader): Promise<void> {
  let queued: QueuedDelivery;
  try {
    queued = parseQueuedDelivery(record.body);
  } catch (error) {
    // Returned: after the last receive it is dead-lettered, where its alarm shows a producer's bug.
    log.warn('queue message is not a delivery', { queueMessageId: record.messageId });
    throw error;
  }
  try {
    const refused = admissions && queued.origin !== undefined ? refusedByFullPool({ ...queued, origin: queued.origin }, admissions) : undefined;
    if (refused) {
      await putOff(undefined, queued, refused, queue, log);
      return;
    }
    const prepared = await prepareDelivery(queued, queue, undefined, read);
    if (prepared.kind !== 'ready') return;
    const { delivery } = prepared;
    let target: ResolvedTarget | undefined;
    const address = async () => (target ??= await resolveTarget(delivery.webhook.url)).address;
    const admission = await admitAttempt({ ...queued, origin: delivery.origin }, delivery.endpoint, address, undefined, admissions);
    if (!admission.admitted) {
      await putOff(delivery, queued, admission, queue, log);
      return;
    }
    let attempted: Attempted = {};
    try {
      attempted = await attemptDelivery(delivery, { queue, log, resolve: target?.resolve, stats });
    } finally {
      await admission.release(attempted.attempt && { delivered: attempted.delivered ?? false });
    }
  } catch (error) {
    log.warn('delivery failed in the store; the queue brings it back', { queueMessageId: record.messageId, messageId: queued.messageId, error: (error as Error).message });
    throw error;
  }
}

/**
 * Leaves a message for later without an attempt, none of its schedule spent: queued again for the
 * refusal's `retryAt`, and its sweep time moved past it when the sweep would take it up before. One
 * refused before it was read (`delivery` undefined) keeps its sweep time: should the sweep take it up
 * first, it is only queued once more.
 */
async function putOff(delivery: PreparedAttempt | undefined, queued: QueuedDelivery, { limit, retryAt }: Extract<Admission, { admitted: false }>, queue: QueueSender, log: Logger): Promise<void> {
  if (delivery && delivery.message.sweepAt! < retryAt) await deferDelivery(delivery, retryAt + sweepGraceMs());
  const { account, webhookId, messageId } = queued;
  await queue.send([{ account, webhookId, messageId, at: retryAt, deferrals: (queued.deferrals ?? 0) + 1, origin: delivery?.origin ?? queued.origin }]);
  log.debug('delivery put off', { account, webhookId, messageId, limit, until: retryAt });
}
