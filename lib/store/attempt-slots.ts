import { tableName } from './client';
import { conditionHeld } from './conditional-write';
import { deleteItem, putItem, queryItems } from './items';
import { attemptSlotKey, attemptSlotsPartition, EXPIRES_AT_ATTRIBUTE, slotOfSortKey, type SlotPool } from './table';

export type { SlotPool };

/**
 * The pool's free slots among its `capacity`: those with no item or whose lease ended by `now`, so
 * that a crashed holder's slot frees itself. One Query, read consistently: a slot released a moment
 * ago is free, not a refusal that puts a message off.
 */
export async function freeSlots(pool: SlotPool, capacity: number, now: number): Promise<number[]> {
  const { items } = await queryItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND sk < :end',
    ExpressionAttributeValues: { ':pk': attemptSlotsPartition(pool), ':end': attemptSlotKey(pool, capacity).sk },
    ConsistentRead: true,
  });
  const held = new Set(items.filter((item) => item.heldUntil > now).map((item) => slotOfSortKey(item.sk)));
  return Array.from({ length: capacity }, (_, slot) => slot).filter((slot) => !held.has(slot));
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
