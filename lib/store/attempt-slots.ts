import { tableName } from './client';
import { conditionHeld } from './conditional-write';
import { deleteItem, putItem, queryItems } from './items';
import { attemptSlotKey, attemptSlotsPartition, EXPIRES_AT_ATTRIBUTE, slotOfSortKey } from './table';

/**
 * Takes one of the scope's `capacity` slots for `holder` until `until`: a slot is free when it has
 * no item or its lease ended by `now`, so that a crashed holder's slot frees itself. One Query shows
 * the free slots; each is then tried with a conditional put, the next one when another taker won it.
 * Returns the slot, or undefined when none is free.
 */
export async function takeSlot(scope: string, capacity: number, holder: string, until: number, now: number): Promise<number | undefined> {
  const { items } = await queryItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND sk < :end',
    ExpressionAttributeValues: { ':pk': attemptSlotsPartition(scope), ':end': attemptSlotKey(scope, capacity).sk },
    // Read consistently: a slot released a moment ago is free, not a refusal that puts a message off.
    ConsistentRead: true,
  });
  const held = new Set(items.filter((item) => item.heldUntil > now).map((item) => slotOfSortKey(item.sk)));
  const free = Array.from({ length: capacity }, (_, slot) => slot).filter((slot) => !held.has(slot));
  // From a random one on: takers at once mostly try different slots.
  const start = Math.floor(Math.random() * free.length);
  for (const slot of [...free.slice(start), ...free.slice(0, start)]) {
    const taken = await conditionHeld(
      putItem({
        TableName: tableName(),
        Item: { ...attemptSlotKey(scope, slot), holder, heldUntil: until, [EXPIRES_AT_ATTRIBUTE]: Math.ceil(until / 1000) },
        ConditionExpression: 'attribute_not_exists(pk) OR heldUntil <= :now',
        ExpressionAttributeValues: { ':now': now },
      }),
    );
    if (taken) return slot;
  }
  return undefined;
}

/** Frees the slot if `holder` still holds it; false when its lease ended and another took it. */
export async function releaseSlot(scope: string, slot: number, holder: string): Promise<boolean> {
  return conditionHeld(
    deleteItem({
      TableName: tableName(),
      Key: attemptSlotKey(scope, slot),
      ConditionExpression: 'holder = :holder',
      ExpressionAttributeValues: { ':holder': holder },
    }),
  );
}
