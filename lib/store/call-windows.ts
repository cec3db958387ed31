/**
 * Calls of one kind counted per fixed window: one webhook's in the webhook's own item (the count goes
 * with it), or all of an account's in its calls item (which a new webhook does not reset). An
 * attribute per kind, `{ startsAt, count }`, moved by conditional updates only, so that concurrent
 * calls never pass the limit.
 */
import { tableName } from './client';
import { conditionHeld, unlessConditionFails } from './conditional-write';
import { getItem, updateItem } from './items';
import { accountCallWindowsKey, webhookKey } from './table';

export type CountedCall = 'testNotification' | 'recover' | 'retry' | 'apiKeyCreation';

/** Whose calls: one webhook's (it must exist), or all of an account's webhooks' together. */
export type CallCounter = { account: string; webhookId: string } | { account: string; webhookId?: undefined };

/** `countedInWindowOf`: when the window the call was counted in started. */
export type CallCount = { countedInWindowOf: number } | { windowEndsAt: number } | { webhookMissing: true };

function counterItem({ account, webhookId }: CallCounter) {
  if (webhookId === undefined) return { key: accountCallWindowsKey(account), mustExist: '' };
  return { key: webhookKey(account, webhookId), mustExist: 'attribute_exists(pk) AND ' };
}

const windowAttribute = (call: CountedCall) => `${call}Window`;

/** Counts one call in the window under way (or a new one) when it has room; otherwise says when it ends. */
export async function countCallInWindow(
  counter: CallCounter,
  call: CountedCall,
  { limit, windowMs, now }: { limit: number; windowMs: number; now: number },
): Promise<CallCount> {
  const { key, mustExist } = counterItem(counter);
  const names = { '#window': windowAttribute(call), '#count': 'count', '#startsAt': 'startsAt' };
  const windowStart = now - windowMs;
  for (;;) {
    const counted = await unlessConditionFails(
      updateItem({
        TableName: tableName(),
        Key: key,
        // startsAt is set to itself only for the update to return it with the count.
        UpdateExpression: 'SET #window.#count = #window.#count + :one, #window.#startsAt = #window.#startsAt',
        ConditionExpression: '#window.#startsAt > :windowStart AND #window.#count < :limit',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ':one': 1, ':windowStart': windowStart, ':limit': limit },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    if (counted) return { countedInWindowOf: counted[names['#window']].startsAt };
    const startedWindow = await conditionHeld(
      updateItem({
        TableName: tableName(),
        Key: key,
        UpdateExpression: 'SET #window = :window',
        ConditionExpression: `${mustExist}(attribute_not_exists(#window) OR #window.startsAt <= :windowStart)`,
        ExpressionAttributeNames: { '#window': names['#window'] },
        ExpressionAttributeValues: { ':window': { startsAt: now, count: 1 }, ':windowStart': windowStart },
      }),
    );
    if (startedWindow) return { countedInWindowOf: now };
    const item = await getItem({
      TableName: tableName(),
      Key: key,
      ConsistentRead: true,
      ProjectionExpression: 'pk, #window',
      ExpressionAttributeNames: { '#window': names['#window'] },
    });
    if (!item) return { webhookMissing: true };
    const window = item[names['#window']] as { startsAt: number; count: number } | undefined;
    // Otherwise another call moved the window between the two updates: count again.
    if (window && window.startsAt > windowStart && window.count >= limit) return { windowEndsAt: window.startsAt + windowMs };
  }
}

/** Takes back a call counted in the window that started at `windowStartsAt`, unless a new window has started since. */
export async function uncountCallInWindow(counter: CallCounter, call: CountedCall, windowStartsAt: number): Promise<void> {
  await conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: counterItem(counter).key,
      UpdateExpression: 'SET #window.#count = #window.#count - :one',
      ConditionExpression: '#window.startsAt = :startsAt AND #window.#count > :zero',
      ExpressionAttributeNames: { '#window': windowAttribute(call), '#count': 'count' },
      ExpressionAttributeValues: { ':one': 1, ':zero': 0, ':startsAt': windowStartsAt },
    }),
  );
}
