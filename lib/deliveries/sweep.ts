import { runtimeConfig } from '../config/runtime';
import { deleteExpiredMessage, expiredMessageBatches, takeDueMessages, type MessageRef } from '../store/messages';

/** How long after its time a message that no queue message brought is taken up by the sweep. */
export const sweepGraceMs = () => Math.round(runtimeConfig().delivery.sweepGraceSeconds * 1000);

/**
 * Pending messages whose sweep time has passed: no queue message brought them to an attempt in
 * time (lost, or their retry lies beyond the queue's longest delay), or an attempt's process died.
 * Oldest first in each shard of the due-time index, up to `limitPerShard` from each. Each is given a
 * new sweep time, so that the next pass does not take it up again while its attempt is under way or queued.
 */
export async function dueMessages(now: number, limitPerShard: number): Promise<MessageRef[]> {
  return takeDueMessages(now, limitPerShard, now + sweepGraceMs());
}

/**
 * Deletes finished messages past their retention, until none is left or `deadline` passes: what
 * DynamoDB's TTL does on AWS, for the embedded store, which has none. Returns how many it deleted.
 */
export async function deleteExpiredMessages(now: number, deadline: number): Promise<number> {
  let deleted = 0;
  const batches = expiredMessageBatches(now);
  while (Date.now() < deadline) {
    const batch = await batches.next();
    if (batch.done) break;
    for (const ref of batch.value) if (await deleteExpiredMessage(ref, now)) deleted += 1;
  }
  return deleted;
}
