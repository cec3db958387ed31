import { QueryCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { dynamoDb, tableName } from '../../lib/store/client';
import { GSI1, messageStatusIndexKey } from '../../lib/store/table';
import type { Target } from './notification-load';

/** Messages of the webhooks with ids in `range` that are recorded as succeeded, counted through the status index. */
export async function succeededCount(account: string, targets: Target[], [from, to]: [string, string]): Promise<number> {
  let count = 0;
  for (const { webhookId } of targets) {
    const low = messageStatusIndexKey(account, webhookId, 'succeeded', from);
    const high = messageStatusIndexKey(account, webhookId, 'succeeded', to);
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await dynamoDb().send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: GSI1.indexName,
          KeyConditionExpression: `${GSI1.partitionKey} = :pk AND ${GSI1.sortKey} BETWEEN :from AND :to`,
          ExpressionAttributeValues: { ':pk': { S: low.gsi1pk }, ':from': { S: low.gsi1sk }, ':to': { S: high.gsi1sk } },
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
