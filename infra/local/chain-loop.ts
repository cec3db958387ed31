import type { ChainSettings } from '../../lib/config/chains';
import { runtimeConfig } from '../../lib/config/runtime';
import { followChain } from '../../lib/chains/follow-loop';
import type { QueueSender } from '../../lib/deliveries/queue';
import { localLogger as logger } from './local-logger';

export interface ChainLoop {
  stop(): Promise<void>;
}

/** What the follower functions do on AWS, beside the API in `npm start`: one follower per chain, for as long as the service runs. */
export function startChainFollowers(chains: ChainSettings[], queue: QueueSender): ChainLoop {
  const stopping = new AbortController();
  const leaseMs = runtimeConfig().leaseSeconds * 1000;
  const running = chains.map((chain) =>
    followChain(chain, { leaseMs, signal: stopping.signal, log: logger, queue }).catch((error: unknown) =>
      logger.error('chain follower stopped', { chainId: chain.chainId, error: (error as Error).message }),
    ),
  );
  if (chains.length > 0) logger.info('following chains', { chainIds: chains.map((chain) => chain.chainId) });
  return {
    stop: async () => {
      stopping.abort();
      await Promise.all(running);
    },
  };
}
