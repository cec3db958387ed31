import { QueryCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { dynamoDb, tableName } from '../../lib/store/client';
import { messageKey, TABLE_KEYS } from '../../lib/store/table';
import type { Target } from './notification-load';

/** Messages of the webhooks with ids in `range` that are recorded as succeeded, counted in their logs. */
export async function succeededCount(account: string, targets: Target[], [from, to]: [string, string]): Promise<number> {
  let count = 0;
  for (const { webhookId } of targets) {
    const low = messageKey(account, webhookId, from);
    const high = messageKey(account, webhookId, to);
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await dynamoDb().send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: `${TABLE_KEYS.partitionKey} = :pk AND ${TABLE_KEYS.sortKey} BETWEEN :from AND :to`,
          FilterExpression: '#status = :succeeded',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':pk': { S: low.pk }, ':from': { S: low.sk }, ':to': { S: high.sk }, ':succeeded': { S: 'succeeded' } },
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
