import { BatchWriteItemCommand, QueryCommand, type AttributeValue, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { dynamoDb, tableName } from '../../lib/store/client';
import { MESSAGE_SORT_KEY_PREFIX, messageKey } from '../../lib/store/table';

export interface AccountMessages {
  messages: number;
  /** Attempts made, over all the messages. */
  attempts: number;
  byStatus: Record<string, number>;
}

/**
 * The webhooks' messages as the table holds them, counted; then deleted, so that the sweep of a
 * later phase does not bring back what a phase left pending (a dead receiver's messages retry for days).
 */
export async function takeAccountMessages(account: string, webhookIds: string[]): Promise<AccountMessages> {
  const counts: AccountMessages = { messages: 0, attempts: 0, byStatus: {} };
  const keys: Array<Record<string, AttributeValue>> = [];
  for (const webhookId of webhookIds) {
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await dynamoDb().send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: { ':pk': { S: messageKey(account, webhookId, '').pk }, ':prefix': { S: MESSAGE_SORT_KEY_PREFIX } },
          ProjectionExpression: 'pk, sk, attempts, #status',
          ExpressionAttributeNames: { '#status': 'status' },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) {
        counts.messages += 1;
        counts.attempts += Number(item.attempts?.N ?? 0);
        const status = item.status?.S ?? 'unknown';
        counts.byStatus[status] = (counts.byStatus[status] ?? 0) + 1;
        keys.push({ pk: item.pk!, sk: item.sk! });
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }
  for (let index = 0; index < keys.length; index += 25) {
    let unprocessed: WriteRequest[] = keys.slice(index, index + 25).map((Key) => ({ DeleteRequest: { Key } }));
    while (unprocessed.length > 0) {
      const { UnprocessedItems } = await dynamoDb().send(new BatchWriteItemCommand({ RequestItems: { [tableName()]: unprocessed } }));
      unprocessed = UnprocessedItems?.[tableName()] ?? [];
    }
  }
  return counts;
}
