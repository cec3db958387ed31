/**
 * A webhook's pointer: its id to its account, for what knows a webhook by its id alone (the address
 * index names watchers by id; the matcher reads their items through it).
 */
import { readItems, type ItemWrite } from './batch';
import { tableName } from './client';
import { deleteItem } from './items';
import { webhookIdOfSortKey, webhookPointerKey } from './table';

export const webhookPointerWrite = (webhookId: string, account: string): ItemWrite => ({ put: { ...webhookPointerKey(webhookId), account } });

export async function deleteWebhookPointer(webhookId: string): Promise<void> {
  await deleteItem({ TableName: tableName(), Key: webhookPointerKey(webhookId) });
}

/** The accounts of the webhooks among `ids` that have a pointer (consistent batch reads), and how many requests that took. */
export async function accountsOfWebhooks(ids: string[]): Promise<{ webhooks: { id: string; account: string }[]; requests: number }> {
  const { items, requests } = await readItems(ids.map(webhookPointerKey));
  return { webhooks: items.map((item) => ({ id: webhookIdOfSortKey(item.pk as string), account: item.account as string })), requests };
}
