import { runtimeConfig } from '../config/runtime';
import { deleteExpiredMessage, postponeSweep, queryTimeIndex, type MessageRef } from '../store/messages';
import { dueIndexShards, duePartition, expiresPartition } from '../store/table';

/** How long after its time a message that no queue message brought is taken up by the sweep. */
export const sweepGraceMs = () => Math.round(runtimeConfig().delivery.sweepGraceSeconds * 1000);

const shards = () => Array.from({ length: dueIndexShards() }, (_, shard) => shard);

/**
 * Pending messages whose sweep time has passed: no queue message brought them to an attempt in
 * time (lost, or their retry lies beyond the queue's longest delay), or an attempt's process died.
 * Oldest first in each shard, up to `limitPerShard` from each. Each is given a new sweep time, so
 * that the next pass does not take it up again while its attempt is under way or queued.
 */
export async function dueMessages(now: number, limitPerShard: number): Promise<MessageRef[]> {
  const nextSweep = now + sweepGraceMs();
  const pages = await Promise.all(
    shards().map(async (shard) => {
      const due = await queryTimeIndex(duePartition(shard), now, limitPerShard);
      const taken = await Promise.all(due.map((entry) => postponeSweep(entry, entry.at, nextSweep)));
      return due.filter((_, index) => taken[index]);
    }),
  );
  return pages.flat().map(({ account, webhookId, messageId }) => ({ account, webhookId, messageId }));
}

/**
 * Deletes finished messages past their retention, until none is left or `deadline` passes: what
 * DynamoDB's TTL does on AWS, for the embedded store, which has none. Returns how many it deleted.
 */
export async function deleteExpiredMessages(now: number, deadline: number): Promise<number> {
  let deleted = 0;
  for (const shard of shards()) {
    for (;;) {
      if (Date.now() >= deadline) return deleted;
      const expired = await queryTimeIndex(expiresPartition(shard), now, 100);
      for (const ref of expired) if (await deleteExpiredMessage(ref, now)) deleted += 1;
      if (expired.length < 100) break;
    }
  }
  return deleted;
}
