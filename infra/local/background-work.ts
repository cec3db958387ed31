import type { ChainSettings } from '../../lib/config/chains';
import { runtimeConfig } from '../../lib/config/runtime';
import { MAX_QUEUE_RECEIVES, queueVisibilitySeconds } from '../../lib/deliveries/queue';
import { startChainFollowers } from './chain-loop';
import { startDeliveryLoop } from './delivery-loop';
import { storeCredentialIn } from './embedded-dynamodb';
import { LocalDeliveryQueue } from './local-queue';
import { localLogger as logger } from './local-logger';
import { startMaintenanceLoop } from './maintenance-loop';
import { startQueueEndpoint } from './queue-endpoint';

export interface BackgroundWork {
  /** Starts nothing new, lets the followers and the attempts under way finish. */
  stop(): Promise<void>;
}

/**
 * What runs as scheduled and queue-driven functions on AWS, beside the API locally: address
 * maintenance, the delivery queue with its consumer and sweeps, and a follower per chain. The queue
 * takes the API's messages at the configuration's deliveryQueueUrl (SQS's protocol, on loopback); the followers and the
 * consumer are handed it directly.
 */
export async function startBackgroundWork(chains: ChainSettings[]): Promise<BackgroundWork> {
  const { deliveryQueueUrl, dynamoDbCredentialFile } = runtimeConfig();
  const queue = newLocalDeliveryQueue();
  const endpoint = deliveryQueueUrl
    ? await startQueueEndpoint(queue, {
        port: Number(new URL(deliveryQueueUrl).port),
        host: '127.0.0.1',
        credential: dynamoDbCredentialFile ? await storeCredentialIn(dynamoDbCredentialFile) : undefined,
      })
    : undefined;
  const maintenance = startMaintenanceLoop();
  const delivery = startDeliveryLoop(queue);
  const followers = startChainFollowers(chains, queue);
  return {
    stop: async () => {
      await followers.stop();
      await Promise.all([maintenance.stop(), delivery.stop()]);
      await endpoint?.close();
      queue.close();
    },
  };
}

/** The delivery queue as the stack configures SQS's: its visibility timeout and its dead-letter rule. */
export function newLocalDeliveryQueue(): LocalDeliveryQueue {
  return new LocalDeliveryQueue({
    visibilityTimeoutSeconds: queueVisibilitySeconds(runtimeConfig().delivery.attemptTimeoutSeconds),
    maxReceiveCount: MAX_QUEUE_RECEIVES,
    log: logger,
  });
}
