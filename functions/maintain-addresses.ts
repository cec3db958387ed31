import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { runAddressMaintenance } from '../lib/addresses/maintenance';
import { lambdaContextInLogs, logger } from '../lib/logger';
import { BACKGROUND_FUNCTIONS, entryPoint } from '../lib/entry-point';

/** Time left at the end of an invocation for the page under way to finish before the timeout. */
const MARGIN_MS = 30_000;

/** Scheduled: passes of address maintenance until the invocation's time is nearly up. */
export const handler = entryPoint(BACKGROUND_FUNCTIONS.maintainAddresses, middy(async (_event: unknown, context: Context) => {
  const deadline = Date.now() + context.getRemainingTimeInMillis() - MARGIN_MS;
  const done = { passes: 0, changesCompleted: 0, purgesFinished: 0 };
  do {
    const pass = await runAddressMaintenance(deadline);
    done.passes += 1;
    done.changesCompleted += pass.changesCompleted;
    done.purgesFinished += pass.purgesFinished;
    if (pass.changesCompleted + pass.purgesFinished === 0 && !pass.unfinished) break;
  } while (Date.now() < deadline);
  if (done.changesCompleted + done.purgesFinished > 0) logger.info('address maintenance', done);
  return done;
}).use(lambdaContextInLogs()));
