import { QueryCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { dynamoDb, tableName } from '../../lib/store/client';
import { MESSAGE_SORT_KEY_PREFIX, messagePartitions, TABLE_KEYS } from '../../lib/store/table';
import type { Target } from './notification-load';

/** Messages of the webhooks with ids in `range` that are recorded as succeeded, counted in their logs. */
export async function succeededCount(account: string, targets: Target[], [from, to]: [string, string]): Promise<number> {
  let count = 0;
  for (const partition of targets.flatMap(({ webhookId }) => messagePartitions(account, webhookId))) {
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await dynamoDb().send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: `${TABLE_KEYS.partitionKey} = :pk AND ${TABLE_KEYS.sortKey} BETWEEN :from AND :to`,
          FilterExpression: '#status = :succeeded',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':pk': { S: partition }, ':from': { S: `${MESSAGE_SORT_KEY_PREFIX}${from}` }, ':to': { S: `${MESSAGE_SORT_KEY_PREFIX}${to}` }, ':succeeded': { S: 'succeeded' } },
          Select: 'COUNT',
          ExclusiveStartKey: startKey,
        }),
      );
      count += page.Count ?? 0;
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }
  return count;
}
