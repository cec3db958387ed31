import { runtimeConfig } from '../../lib/config/runtime';
import { Dispatcher } from '../../lib/deliveries/dispatcher';
import { consumeQueueLocally } from '../../lib/deliveries/queue';
import { runResumeJobs } from '../../lib/deliveries/resume';
import { deleteExpiredMessages, dueMessages } from '../../lib/deliveries/sweep';
import { localLogger as logger } from './local-logger';

/** How often the due-time index is swept, and how many messages a sweep takes from each shard. */
const SWEEP_MS = 1_000;
const SWEEP_LIMIT_PER_SHARD = 500;
const EXPIRY_SWEEP_MS = 60_000;

export interface DeliveryLoop {
  /** Takes no new message, and waits for the attempts under way (at most an attempt's timeout). */
  stop(): Promise<void>;
}

/**
 * What the queue, the dispatcher function and the scheduled sweeps do on AWS, beside the API in
 * `npm start`: queued messages go to the dispatcher at their time; the due-time index is swept every
 * second for what no queue message brought (after a restart: everything that was pending), and the
 * resume jobs of reactivated webhooks are run; expired messages are deleted every minute.
 */
export function startDeliveryLoop(): DeliveryLoop {
  const dispatcher = new Dispatcher(runtimeConfig().delivery.concurrency, logger);
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;
  const later = (run: () => void, ms: number) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!stopped) run();
    }, ms);
    timers.add(timer);
  };
  const stopConsuming = consumeQueueLocally((deliveries) => {
    const now = Date.now();
    for (const { at, ...ref } of deliveries) {
      if (at <= now) dispatcher.submit(ref);
      else later(() => dispatcher.submit(ref), at - now);
    }
  });
  let sweeping: Promise<void> = Promise.resolve();
  let expiring: Promise<void> = Promise.resolve();
  const sweep = () => {
    sweeping = Promise.all([dueMessages(Date.now(), SWEEP_LIMIT_PER_SHARD), runResumeJobs(Date.now() + SWEEP_MS)])
      .then(([due]) => {
        for (const ref of due) dispatcher.submit(ref);
      })
      .catch((error) => logger.warn('delivery sweep failed', { error: (error as Error).message }))
      .finally(() => later(sweep, SWEEP_MS));
  };
  const sweepExpired = () => {
    expiring = deleteExpiredMessages(Date.now(), Date.now() + 2_000)
      .then((deleted) => {
        if (deleted > 0) logger.info('expired messages deleted', { deleted });
      })
      .catch((error) => logger.warn('expiry sweep failed', { error: (error as Error).message }))
      .finally(() => later(sweepExpired, EXPIRY_SWEEP_MS));
  };
  later(sweep, 0);
  later(sweepExpired, EXPIRY_SWEEP_MS);
  return {
    stop: async () => {
      stopped = true;
      stopConsuming();
      for (const timer of timers) clearTimeout(timer);
      await Promise.all([sweeping, expiring]);
      await dispatcher.drain();
    },
  };
}
