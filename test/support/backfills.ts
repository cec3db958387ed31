import { randomAccount } from './factories';
import type { TestClient } from './local-service';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
// Shorter than a test's timeout (30 s), so that a wait that fails says where it stopped.
const CHECKPOINT_WAIT_MS = 15_000;
const BACKFILL_WAIT_MS = 20_000;

/** Calls to a service following `chainId`, for backfill tests. */
export function backfillCalls(client: TestClient, chainId: string) {
  return {
    /** The live follower's checkpoint (GET /v1/chains), once it is at least `block`. */
    async checkpointAtLeast(block: number): Promise<number> {
      const key = await client.keyFor(randomAccount());
      const deadline = Date.now() + CHECKPOINT_WAIT_MS;
      for (;;) {
        const { body } = await client.call('GET', '/v1/chains', { key });
        const followed = body.chains.find((one: { chainId: string }) => one.chainId === chainId);
        if ((followed?.follower.checkpointBlock ?? -1) >= block) return followed.follower.checkpointBlock;
        if (Date.now() > deadline) throw new Error(`the follower is not at block ${block} after ${CHECKPOINT_WAIT_MS} ms: ${JSON.stringify(followed?.follower)}`);
        await sleep(50);
      }
    },
    /** The backfill, once it is no longer running. */
    async backfillEnded(key: string, webhookId: string, backfillId: string) {
      const deadline = Date.now() + BACKFILL_WAIT_MS;
      for (;;) {
        const { body } = await client.call('GET', `/v1/webhooks/${webhookId}/backfills/${backfillId}`, { key });
        if (body.status !== 'running') return body;
        if (Date.now() > deadline) throw new Error(`backfill still running after ${BACKFILL_WAIT_MS} ms: ${JSON.stringify(body)}`);
        await sleep(50);
      }
    },
  };
}
