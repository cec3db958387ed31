import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { runBackfills } from '../lib/backfills/runner';
import { followedChainOnce } from '../lib/config/chains';
import { runtimeConfig } from '../lib/config/runtime';
import { deliveryQueueSender } from '../lib/deliveries/sqs-queue';
import { lambdaContextInLogs, logger } from '../lib/logger';
import { runningBackfillsOfChain } from '../lib/store/backfills';
import { BACKGROUND_FUNCTIONS, entryPoint } from '../lib/entry-point';

/**
 * Time left after the deadline for the backfills under way to finish their run of blocks, then give
 * the lease up. A run's blocks come at its share of the chain's paced requests (a run of
 * MAX_RUN_BLOCKS empty blocks, with `concurrencyPerChain` backfills sharing `rpcRequestsPerSecond`,
 * takes most of this margin), then its notifications are recorded. A run cut off by
 * the timeout loses nothing, but counts as the function's error.
 */
const MARGIN_MS = 30_000;

/**
 * Scheduled every minute per followed chain (CHAIN_ID): runs the chain's backfills until shortly
 * before its timeout, holding the chain's backfill lease, so that the next run takes over where this
 * one stopped. With no backfill running it ends at once: a backfill started meanwhile waits for the
 * next minute's run, and an idle chain costs one query a minute, not a function waiting all minute.
 */
export const handler = entryPoint(BACKGROUND_FUNCTIONS.runBackfills, middy(async (_event: unknown, context: Context) => {
  const chain = await followedChainOnce();
  if ((await runningBackfillsOfChain(chain.chainId, 1)).length === 0) return;
  await runBackfills(chain, {
    leaseMs: runtimeConfig().leaseSeconds * 1000 * 2,
    deadline: Date.now() + context.getRemainingTimeInMillis() - MARGIN_MS,
    signal: new AbortController().signal,
    log: logger,
    queue: deliveryQueueSender(),
  });
}).use(lambdaContextInLogs()));
