import { runAddressMaintenance } from '../../lib/addresses/maintenance';
import { asEntryPoint, BACKGROUND_FUNCTIONS } from '../../lib/entry-point';
import { localLogger as logger } from './local-logger';

/** A pass's time budget, short so that stopping never waits long, and the pause after a pass that left nothing to go on with. */
const PASS_MS = 2_000;
const PAUSE_MS = 500;

export interface MaintenanceLoop {
  /** Lets the pass under way finish, and starts no other. */
  stop(): Promise<void>;
}

/**
 * What the scheduled maintenance function does on AWS, beside the API in `npm start`: completing
 * address changes a crash cut off and purging deleted webhooks, pass after pass. A pass that fails
 * (the store restarting, say) is logged, and the next one tries again.
 */
export function startMaintenanceLoop(): MaintenanceLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<void> = Promise.resolve();
  const run = async () => {
    let unfinished = false;
    try {
      const result = await asEntryPoint(BACKGROUND_FUNCTIONS.maintainAddresses, () => runAddressMaintenance(Date.now() + PASS_MS));
      unfinished = result.unfinished;
      if (result.changesCompleted + result.purgesFinished > 0) {
        logger.info('address maintenance', { changesCompleted: result.changesCompleted, purgesFinished: result.purgesFinished });
      }
    } catch (error) {
      logger.warn('address maintenance pass failed', { error: (error as Error).message });
    }
    if (!stopped) timer = setTimeout(() => (pass = run()), unfinished ? 0 : PAUSE_MS);
  };
  timer = setTimeout(() => (pass = run()), 0);
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await pass;
    },
  };
}
