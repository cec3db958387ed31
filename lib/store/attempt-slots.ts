import { tableName } from './client';
import { conditionHeld } from './conditional-write';
import { deleteItem, putItem, queryItems } from './items';
import { attemptSlotKey, attemptSlotsPartition, EXPIRES_AT_ATTRIBUTE, SLOTS_PER_SHARD, slotOfSortKey, type SlotPool } from './table';

export type { SlotPool };

/** A shard of a pool as read: its free slots, and when the leases of the others end (ms). */
export interface ShardSlots {
  free: number[];
  leaseEnds: number[];
}

/**
 * The free slots of one shard of the pool (of `capacity` slots in all): those with no item or whose
 * lease ended by `now`, so that a crashed holder's slot frees itself. One Query of the shard's
 * partition, read consistently: a slot released a moment ago is free, not a refusal that puts a
 * message off.
 */
export async function readShardSlots(pool: SlotPool, capacity: number, shard: number, now: number): Promise<ShardSlots> {
  const { items } = await queryItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': attemptSlotsPartition(pool, shard) },
    ConsistentRead: true,
  });
  const held = new Map<number, number>(items.filter((item) => item.heldUntil > now).map((item) => [slotOfSortKey(item.sk), item.heldUntil]));
  const first = shard * SLOTS_PER_SHARD;
  const slots = Array.from({ length: Math.max(0, Math.min(SLOTS_PER_SHARD, capacity - first)) }, (_, index) => first + index);
  return { free: slots.filter((slot) => !held.has(slot)), leaseEnds: slots.flatMap((slot) => held.get(slot) ?? []) };
}

/**
 * Takes one of the `free` slots of the pool for `holder` until `until`, each tried with a
 * conditional put, the next one when another taker won it. Returns the slot, or undefined when
 * others took them all.
 */
export async function takeFreeSlot(pool: SlotPool, free: number[], holder: string, until: number, now: number): Promise<number | undefined> {
  // From a random one on: takers at once mostly try different slots.
  const start = Math.floor(Math.random() * free.length);
  for (const slot of [...free.slice(start), ...free.slice(0, start)]) {
    const taken = await conditionHeld(
      putItem({
        TableName: tableName(),
        Item: { ...attemptSlotKey(pool, slot), holder, heldUntil: until, [EXPIRES_AT_ATTRIBUTE]: Math.ceil(until / 1000) },
        ConditionExpression: 'attribute_not_exists(pk) OR heldUntil <= :now',
        ExpressionAttributeValues: { ':now': now },
      }),
    );
    if (taken) return slot;
  }
  return undefined;
}

/** Frees the slot if `holder` still holds it; false when its lease ended and another took it. */
export async function releaseSlot(pool: SlotPool, slot: number, holder: string): Promise<boolean> {
  return conditionHeld(
    deleteItem({
      TableName: tableName(),
      Key: attemptSlotKey(pool, slot),
      ConditionExpression: 'holder = :holder',
      ExpressionAttributeValues: { ':holder': holder },
    }),
  );
}
