import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { runtimeConfig } from '../../lib/config/runtime';
import { asEntryPoint, BACKGROUND_FUNCTIONS } from '../../lib/entry-point';
import { ConsumerAdmissions } from '../../lib/deliveries/admission';
import { consumeDeliveries } from '../../lib/deliveries/consumer';
import { CONSUMER_BATCH_SIZE, consumerBatches, type DeliveryQueue, type QueueRecord } from '../../lib/deliveries/queue';
import { runResumeJobs } from '../../lib/deliveries/resume';
import { deliveryStats, deleteExpiredStats } from '../../lib/deliveries/stats';
import { deleteExpiredMessages, dueMessages } from '../../lib/deliveries/sweep';
import { deliveryAttemptLogger, localLogger as logger } from './local-logger';

/** How often the due-time index is swept, and how many messages a sweep takes from each shard. */
const SWEEP_MS = 1_000;
const SWEEP_LIMIT_PER_SHARD = 500;
const EXPIRY_SWEEP_MS = 60_000;
/** How long a poll waits for a record. */
const POLL_WAIT_SECONDS = 1;
/**
 * How long a poller waits for its batch before it receives the next: attempts that take longer (a
 * slow or hanging receiver) go on beside the next batches, their records hidden until they end.
 */
const BATCH_WAIT_MS = 1_000;

export interface DeliveryLoop {
  /** Receives no new batch, waits for those under way (at most an attempt's timeout), and writes the statistics' counts left. */
  stop(): Promise<void>;
}

/**
 * What the dispatcher function's event source mapping and the scheduled sweeps do on AWS, beside the
 * API in `npm start`: as many pollers as the mapping's batches at once each receive a batch from the
 * queue and hand it to the same consumer the dispatcher function runs, which settles each record as
 * soon as it is done with: deleted, or left to come back after its visibility timeout. A poller waits
 * for its batch at most BATCH_WAIT_MS: one slow attempt never holds the records behind it, and the
 * records under way are at most the stage's `concurrency.total`. The due-time index is swept every second for what no queue
 * message brought (after a restart: everything that was pending), and the resume jobs of reactivated
 * webhooks are run; expired messages and statistics are deleted every minute. The consumer counts
 * the attempts in the process's statistics buffer, as the dispatcher function does.
 */
export function startDeliveryLoop(queue: DeliveryQueue): DeliveryLoop {
  const { concurrency } = runtimeConfig().delivery;
  const pollers = consumerBatches(concurrency);
  const attemptLog = deliveryAttemptLogger();
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;
  const stopping = new AbortController();
  // Each poller waiting in a receive listens to it.
  setMaxListeners(pollers + 1, stopping.signal);
  const later = (run: () => void, ms: number) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!stopped) run();
    }, ms);
    timers.add(timer);
  };
  const admissions = new ConsumerAdmissions();
  const consuming = new Set<Promise<void>>();
  let recordsUnderWay = 0;
  const waitingForRoom = new Set<() => void>();
  const anyBatchEnded = () => new Promise<void>((resolve) => waitingForRoom.add(resolve));
  const wakePollers = () => {
    for (const wake of waitingForRoom) wake();
    waitingForRoom.clear();
  };
  const consume = (records: QueueRecord[]) => {
    const unsettled = new Set(records);
    recordsUnderWay += records.length;
    const settled = (record: QueueRecord, returned: boolean) => {
      if (!unsettled.delete(record)) return;
      recordsUnderWay -= 1;
      wakePollers();
      if (!returned) void queue.acknowledge([record]).catch((error) => logger.warn('delivery record not deleted; it comes back after its visibility timeout', { error: (error as Error).message }));
    };
    const batch = asEntryPoint(BACKGROUND_FUNCTIONS.dispatchDeliveries, () => consumeDeliveries(records, { queue, log: attemptLog, admissions, settled }))
      .then(() => undefined)
      .catch((error) => logger.warn('delivery batch failed; its records come back after their visibility timeout', { error: (error as Error).message }))
      .finally(() => {
        // Records the consumer never settled (it failed as a whole) come back after their visibility timeout.
        recordsUnderWay -= unsettled.size;
        unsettled.clear();
        consuming.delete(batch);
        wakePollers();
      });
    consuming.add(batch);
    return batch;
  };
  const poll = async () => {
    while (!stopped) {
      try {
        if (recordsUnderWay + CONSUMER_BATCH_SIZE > concurrency.total) {
          await anyBatchEnded();
          continue;
        }
        // Room for a whole batch is held while the receive waits: pollers receiving at once never take more than the room.
        recordsUnderWay += CONSUMER_BATCH_SIZE;
        let records: QueueRecord[];
        try {
          records = await queue.receive(CONSUMER_BATCH_SIZE, POLL_WAIT_SECONDS, stopping.signal);
        } finally {
          recordsUnderWay -= CONSUMER_BATCH_SIZE;
        }
        if (records.length === 0) continue;
        await Promise.race([consume(records), sleep(BATCH_WAIT_MS)]);
      } catch (error) {
        logger.warn('delivery poll failed; its records come back after their visibility timeout', { error: (error as Error).message });
      }
    }
  };
  const polling = Array.from({ length: pollers }, poll);
  let sweeping: Promise<void> = Promise.resolve();
  let expiring: Promise<void> = Promise.resolve();
  const sweep = () => {
    sweeping = asEntryPoint(BACKGROUND_FUNCTIONS.sweepDeliveries, () =>
      Promise.all([dueMessages(Date.now(), SWEEP_LIMIT_PER_SHARD), runResumeJobs(Date.now() + SWEEP_MS, queue)]).then(([due]) => queue.send(due.map((ref) => ({ ...ref, at: Date.now() })))),
    )
      .catch((error) => logger.warn('delivery sweep failed', { error: (error as Error).message }))
      .finally(() => later(sweep, SWEEP_MS));
  };
  const sweepExpired = () => {
    const deadline = Date.now() + 2_000;
    expiring = Promise.all([deleteExpiredMessages(Date.now(), deadline), deleteExpiredStats(Date.now(), deadline)])
      .then(([messages, stats]) => {
        if (messages > 0) logger.info('expired messages deleted', { deleted: messages });
        if (stats > 0) logger.info('expired delivery statistics deleted', { deleted: stats });
      })
      .catch((error) => logger.warn('expiry sweep failed', { error: (error as Error).message }))
      .finally(() => later(sweepExpired, EXPIRY_SWEEP_MS));
  };
  later(sweep, 0);
  later(sweepExpired, EXPIRY_SWEEP_MS);
  return {
    stop: async () => {
      stopped = true;
      stopping.abort();
      for (const timer of timers) clearTimeout(timer);
      wakePollers();
      await Promise.all([sweeping, expiring, ...polling]);
      await Promise.all(consuming);
      await deliveryStats.flush(Date.now(), { all: true, log: logger });
    },
  };
}
