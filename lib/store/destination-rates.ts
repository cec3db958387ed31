import { tableName } from './client';
import { conditionHeld } from './conditional-write';
import { updateItem } from './items';
import { destinationRateKey, EXPIRES_AT_ATTRIBUTE } from './table';

/** How far ahead of a taker's clock a counter's second may be and still be the second under way elsewhere. */
const CLOCK_AHEAD_SECONDS = 2;

/**
 * Takes `wanted` of the attempts one partition of a destination's rate counter allows in `second`
 * (epoch seconds): at most `capacity` in all. One conditional update within the second under way;
 * for a new second, a second update that starts it (and, another taker having started it meanwhile,
 * the first again). False when the partition has no room left.
 */
export async function takeRateTokens(destination: string, shard: number, second: number, wanted: number, capacity: number): Promise<boolean> {
  const key = destinationRateKey(destination, shard);
  const names = { '#second': 'second', '#taken': 'taken' };
  const addToSecond = () =>
    conditionHeld(
      updateItem({
        TableName: tableName(),
        Key: key,
        UpdateExpression: 'ADD #taken :wanted',
        ConditionExpression: '#second = :second AND #taken <= :most',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ':wanted': wanted, ':second': second, ':most': capacity - wanted },
      }),
    );
  if (await addToSecond()) return true;
  const started = await conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: key,
      UpdateExpression: `SET #second = :second, #taken = :wanted, ${EXPIRES_AT_ATTRIBUTE} = :expires`,
      // A second far ahead is a clock's mistake (a process's, or a caller's `now`): it does not hold the counter.
      ConditionExpression: 'attribute_not_exists(#second) OR #second < :second OR #second > :ahead',
      ExpressionAttributeNames: names,
      // Kept a day past its last second: a destination nobody sends to any more goes with DynamoDB's TTL.
      ExpressionAttributeValues: { ':wanted': wanted, ':second': second, ':ahead': second + CLOCK_AHEAD_SECONDS, ':expires': second + 86_400 },
    }),
  );
  // Another taker started the second between the two writes: there may be room in it still.
  return started || addToSecond();
}
