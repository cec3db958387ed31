import { runBackfills } from '../../lib/backfills/runner';
import type { ChainSettings } from '../../lib/config/chains';
import { runtimeConfig } from '../../lib/config/runtime';
import { followChain } from '../../lib/chains/follow-loop';
import { asEntryPoint, BACKGROUND_FUNCTIONS } from '../../lib/entry-point';
import type { QueueSender } from '../../lib/deliveries/queue';
import { localLogger as logger } from './local-logger';

export interface ChainLoop {
  stop(): Promise<void>;
}

/**
 * What the follower and backfill functions do on AWS, beside the API in `npm start`: per chain, one
 * follower and one backfill runner, for as long as the service runs.
 */
export function startChainFollowers(chains: ChainSettings[], queue: QueueSender): ChainLoop {
  const stopping = new AbortController();
  const leaseMs = runtimeConfig().leaseSeconds * 1000;
  const options = { leaseMs, signal: stopping.signal, log: logger, queue };
  const running = chains.flatMap((chain) => [
    asEntryPoint(BACKGROUND_FUNCTIONS.followChain, () => followChain(chain, options)).catch((error: unknown) => logger.error('chain follower stopped', { chainId: chain.chainId, error: (error as Error).message })),
    asEntryPoint(BACKGROUND_FUNCTIONS.runBackfills, () => runBackfills(chain, options)).catch((error: unknown) => logger.error('backfill runner stopped', { chainId: chain.chainId, error: (error as Error).message })),
  ]);
  if (chains.length > 0) logger.info('following chains', { chainIds: chains.map((chain) => chain.chainId) });
  return {
    stop: async () => {
      stopping.abort();
      await Promise.all(running);
    },
  };
}
