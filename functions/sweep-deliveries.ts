import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { runResumeJobs } from '../lib/deliveries/resume';
import { deliveryQueueSender } from '../lib/deliveries/sqs-queue';
import { dueMessages } from '../lib/deliveries/sweep';
import { lambdaContextInLogs, logger } from '../lib/logger';
import { BACKGROUND_FUNCTIONS, entryPoint } from '../lib/entry-point';

const MARGIN_MS = 10_000;
const LIMIT_PER_SHARD = 1_000;

/**
 * Scheduled: queues the messages of reactivated webhooks that waited while they were inactive, and
 * the pending messages that no queue message brought to an attempt (retries beyond SQS's 15-minute
 * delay, a lost queue message, an attempt whose process died), pass after pass until none is left
 * or the invocation's time is nearly up.
 */
export const handler = entryPoint(BACKGROUND_FUNCTIONS.sweepDeliveries, middy(async (_event: unknown, context: Context) => {
  const deadline = Date.now() + context.getRemainingTimeInMillis() - MARGIN_MS;
  const queue = deliveryQueueSender();
  let queued = await runResumeJobs(deadline, queue);
  do {
    const now = Date.now();
    const due = await dueMessages(now, LIMIT_PER_SHARD);
    await queue.send(due.map((ref) => ({ ...ref, at: now })));
    queued += due.length;
    if (due.length === 0) break;
  } while (Date.now() < deadline);
  if (queued > 0) logger.info('due messages queued', { queued });
  return { queued };
}).use(lambdaContextInLogs()));
