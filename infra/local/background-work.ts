import type { ChainSettings } from '../../lib/config/chains';
import { startChainFollowers } from './chain-loop';
import { startDeliveryLoop } from './delivery-loop';
import { startMaintenanceLoop } from './maintenance-loop';

export interface BackgroundWork {
  /** Starts nothing new, lets the followers and the attempts under way finish. */
  stop(): Promise<void>;
}

/**
 * What runs as scheduled and queue-driven functions on AWS, beside the API locally: address
 * maintenance, delivery (the queue's consumer, the dispatcher and the sweeps) and a follower per chain.
 */
export function startBackgroundWork(chains: ChainSettings[]): BackgroundWork {
  const maintenance = startMaintenanceLoop();
  const delivery = startDeliveryLoop();
  const followers = startChainFollowers(chains);
  return {
    stop: async () => {
      await followers.stop();
      await Promise.all([maintenance.stop(), delivery.stop()]);
    },
  };
}
