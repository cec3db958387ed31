import { randomAccount } from './factories';
import type { TestClient } from './local-service';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Calls to a service following `chainId`, for backfill tests. */
export function backfillCalls(client: TestClient, chainId: string) {
  return {
    /** The live follower's checkpoint (GET /v1/chains), once it is at least `block`. */
    async checkpointAtLeast(block: number): Promise<number> {
      const key = await client.keyFor(randomAccount());
      for (let tries = 0; tries < 300; tries += 1) {
        const { body } = await client.call('GET', '/v1/chains', { key });
        const followed = body.chains.find((one: { chainId: string }) => one.chainId === chainId);
        if ((followed?.follower.checkpointBlock ?? -1) >= block) return followed.follower.checkpointBlock;
        await sleep(50);
      }
      throw new Error(`the follower never reached block ${block}`);
    },
    /** The backfill, once it is no longer running. */
    async backfillEnded(key: string, webhookId: string, backfillId: string) {
      for (let tries = 0; tries < 600; tries += 1) {
        const { body } = await client.call('GET', `/v1/webhooks/${webhookId}/backfills/${backfillId}`, { key });
        if (body.status !== 'running') return body;
        await sleep(50);
      }
      throw new Error(`backfill ${backfillId} still running`);
    },
  };
}
