import { tableName } from '../../lib/store/client';
import { getItem, putItem, updateItem } from '../../lib/store/items';
import * as messages from '../../lib/store/messages';
import { webhookKey, webhookPointerKey } from '../../lib/store/table';

/**
 * A fault that asking again does not fix: the webhook's item without its metadata, which the chain
 * follower's matcher cannot read (as a faulty migration might leave it). Returns what puts it back.
 */
export const breakWebhookItem = (webhookId: string) => damageWebhookItem(webhookId, { UpdateExpression: 'REMOVE metadata' });

/**
 * A fault in recording the webhook's notifications that asking again does not fix: the store refuses
 * every message of the webhook (as it would an item over its 400 KB), while the webhook's own item is
 * read and matched. No data can make that happen any more (a message's state holds nothing large), so
 * the store's refusal is stood in for. Returns what puts it back.
 */
export async function breakWebhookRecording(webhookId: string): Promise<() => Promise<void>> {
  const putNewMessage = messages.putNewMessage;
  const refusal = jest.spyOn(messages, 'putNewMessage').mockImplementation(async (message) => {
    if (message.webhookId !== webhookId) return putNewMessage(message);
    throw Object.assign(new Error('Item size has exceeded the maximum allowed size'), { name: 'ValidationException' });
  });
  return async () => refusal.mockRestore();
}

async function damageWebhookItem(webhookId: string, update: { UpdateExpression: string; ExpressionAttributeValues?: Record<string, unknown> }): Promise<() => Promise<void>> {
  const { account } = (await getItem({ TableName: tableName(), Key: webhookPointerKey(webhookId) }))!;
  const key = webhookKey(account, webhookId);
  const item = (await getItem({ TableName: tableName(), Key: key }))!;
  await updateItem({ TableName: tableName(), Key: key, ...update });
  return () => putItem({ TableName: tableName(), Item: item });
}
