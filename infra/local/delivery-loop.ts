import { setMaxListeners } from 'node:events';
import { runtimeConfig } from '../../lib/config/runtime';
import { asEntryPoint, BACKGROUND_FUNCTIONS } from '../../lib/entry-point';
import { consumeDeliveries } from '../../lib/deliveries/consumer';
import { CONSUMER_BATCH_SIZE, consumerBatches, type DeliveryQueue } from '../../lib/deliveries/queue';
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

export interface DeliveryLoop {
  /** Receives no new batch, waits for those under way (at most an attempt's timeout), and writes the statistics' counts left. */
  stop(): Promise<void>;
}

/**
 * What the dispatcher function's event source mapping and the scheduled sweeps do on AWS, beside the
 * API in `npm start`: as many pollers as the mapping's batches at once each receive a batch from the queue, hand it to the same
 * consumer the dispatcher function runs, and delete the records it does not return (those come back
 * after their visibility timeout). The due-time index is swept every second for what no queue
 * message brought (after a restart: everything that was pending), and the resume jobs of reactivated
 * webhooks are run; expired messages and statistics are deleted every minute. The consumer counts
 * the attempts in the process's statistics buffer, as the dispatcher function does.
 */
export function startDeliveryLoop(queue: DeliveryQueue): DeliveryLoop {
  const pollers = consumerBatches(runtimeConfig().delivery.concurrency);
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
  const poll = async () => {
    while (!stopped) {
      try {
        const records = await queue.receive(CONSUMER_BATCH_SIZE, POLL_WAIT_SECONDS, stopping.signal);
        if (records.length === 0) continue;
        const { batchItemFailures } = await asEntryPoint(BACKGROUND_FUNCTIONS.dispatchDeliveries, () => consumeDeliveries(records, { queue, log: attemptLog }));
        const failed = new Set(batchItemFailures.map(({ itemIdentifier }) => itemIdentifier));
        await queue.acknowledge(records.filter((record) => !failed.has(record.messageId)));
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
      await Promise.all([sweeping, expiring, ...polling]);
      await deliveryStats.flush(Date.now(), { all: true, log: logger });
    },
  };
}
