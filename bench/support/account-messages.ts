import { tableName } from '../../lib/store/client';
import { writeItems } from '../../lib/store/batch';
import { queryAllItems } from '../../lib/store/items';
import { MESSAGE_SORT_KEY_PREFIX, messagePartitions } from '../../lib/store/table';

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
  const keys: Array<{ pk: string; sk: string }> = [];
  for (const partition of webhookIds.flatMap((webhookId) => messagePartitions(account, webhookId))) {
    const { items } = await queryAllItems({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': partition, ':prefix': MESSAGE_SORT_KEY_PREFIX },
      ProjectionExpression: 'pk, sk, attempts, #status',
      ExpressionAttributeNames: { '#status': 'status' },
      ConsistentRead: true,
    });
    for (const item of items) {
      counts.messages += 1;
      counts.attempts += Number(item.attempts ?? 0);
      const status = (item.status as string | undefined) ?? 'unknown';
      counts.byStatus[status] = (counts.byStatus[status] ?? 0) + 1;
      keys.push({ pk: item.pk as string, sk: item.sk as string });
    }
  }
  await writeItems(keys.map((key) => ({ delete: key })));
  return counts;
}
