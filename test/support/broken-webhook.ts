import { randomBytes } from 'node:crypto';
import { tableName } from '../../lib/store/client';
import { getItem, putItem, updateItem } from '../../lib/store/items';
import { webhookKey, webhookPointerKey } from '../../lib/store/table';

/**
 * A fault that asking again does not fix: the webhook's item without its metadata, which the chain
 * follower's matcher cannot read (as a faulty migration might leave it). Returns what puts it back.
 */
export const breakWebhookItem = (webhookId: string) => damageWebhookItem(webhookId, { UpdateExpression: 'REMOVE metadata' });

/**
 * A fault in recording the webhook's notifications that asking again does not fix: an event type of
 * 300 KB that does not compress, copied into each message item, which the store then refuses (over
 * DynamoDB's 400 KB), while the webhook's own item is read and matched. Returns what puts it back.
 */
export const breakWebhookRecording = (webhookId: string) =>
  damageWebhookItem(webhookId, { UpdateExpression: 'SET eventType = :eventType', ExpressionAttributeValues: { ':eventType': randomBytes(225_000).toString('base64') } });

async function damageWebhookItem(webhookId: string, update: { UpdateExpression: string; ExpressionAttributeValues?: Record<string, unknown> }): Promise<() => Promise<void>> {
  const { account } = (await getItem({ TableName: tableName(), Key: webhookPointerKey(webhookId) }))!;
  const key = webhookKey(account, webhookId);
  const item = (await getItem({ TableName: tableName(), Key: key }))!;
  await updateItem({ TableName: tableName(), Key: key, ...update });
  return () => putItem({ TableName: tableName(), Item: item });
}
