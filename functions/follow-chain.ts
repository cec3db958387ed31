import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { followChain } from '../lib/chains/follow-loop';
import { deliveryQueueSender } from '../lib/deliveries/sqs-queue';
import {
  CHAIN_LAG_METRIC,
  CHAIN_METRICS_NAMESPACE,
  CHAIN_METRICS_SERVICE,
  CHAIN_QUARANTINE_METRIC,
  CHAIN_STALLED_METRIC,
  CHAIN_TRACES_OMITTED_METRIC,
  followedChainOnce,
} from '../lib/config/chains';
import { runtimeConfig } from '../lib/config/runtime';
import { lambdaContextInLogs, logger } from '../lib/logger';
import { BACKGROUND_FUNCTIONS, entryPoint } from '../lib/entry-point';

/** Time left for the lease's release and the metrics' flush after the last step. */
const MARGIN_MS = 5_000;
const LAG_METRIC_INTERVAL_MS = 10_000;
const metrics = new Metrics({ namespace: CHAIN_METRICS_NAMESPACE, serviceName: CHAIN_METRICS_SERVICE });

/**
 * Scheduled every minute per followed chain (CHAIN_ID): follows the chain until just before its
 * timeout, holding the chain's lease, so that the next run takes over where this one stopped. A run
 * that starts while another holds the lease waits for it and stops at its own deadline.
 */
export const handler = entryPoint(BACKGROUND_FUNCTIONS.followChain, middy(async (_event: unknown, context: Context) => {
  const chain = await followedChainOnce();
  const deadline = Date.now() + context.getRemainingTimeInMillis() - MARGIN_MS;
  let publishedAt = 0;
  let stallPublishedAt = 0;
  const publish = (add: () => void) => {
    metrics.addDimension('chainId', chain.chainId);
    add();
    metrics.publishStoredMetrics();
  };
  await followChain(chain, {
    leaseMs: runtimeConfig().leaseSeconds * 1000 * 2,
    deadline,
    signal: new AbortController().signal,
    log: logger,
    queue: deliveryQueueSender(),
    onStep: ({ lag, quarantined, tracesOmitted }) => {
      if (!quarantined && !tracesOmitted && Date.now() - publishedAt < LAG_METRIC_INTERVAL_MS) return;
      publishedAt = Date.now();
      publish(() => {
        metrics.addMetric(CHAIN_LAG_METRIC, MetricUnit.Count, lag);
        if (quarantined) metrics.addMetric(CHAIN_QUARANTINE_METRIC, MetricUnit.Count, quarantined);
        if (tracesOmitted) metrics.addMetric(CHAIN_TRACES_OMITTED_METRIC, MetricUnit.Count, tracesOmitted);
      });
    },
    // From the follower's status, recorded whatever its steps do: a step stuck on a block still reports its stall.
    onStatus: ({ stalledSince, recordedAt }) => {
      if (Date.now() - stallPublishedAt < LAG_METRIC_INTERVAL_MS) return;
      stallPublishedAt = Date.now();
      publish(() => metrics.addMetric(CHAIN_STALLED_METRIC, MetricUnit.Seconds, stalledSince === undefined ? 0 : Math.round((recordedAt - stalledSince) / 1000)));
    },
  });
}).use(lambdaContextInLogs()));
