import { v7 as uuidv7 } from 'uuid';
import { pageTokenKey } from '../config/page-token-key';
import { webhookNotFound } from '../errors';
import { pageTokens } from '../page-token';
import {
  webhookChanges,
  type CreateWebhookInput,
  type DeleteWebhookQuery,
  type ListWebhooksQuery,
  type UpdateWebhookInput,
  type Webhook,
  type WebhookList,
} from '../schemas/webhook';
import type { Deactivation } from '../schemas/stats';
import { storeNewWebhook } from '../addresses/addresses';
import { assertChainFollowed } from '../chains/followed-chains';
import { requestResume } from '../deliveries/resume';
import { deleteWebhookPermanently } from '../addresses/purge';
import { countNewWebhook, uncountUnstoredWebhook } from '../limits/account-limits';
import { uuidv7Time } from '../uuid';
import { getWebhookItem, queryWebhooks, toWebhook, updateWebhookItem } from '../store/webhooks';

const notFound = webhookNotFound;

/** A deactivation asked for through the API, as the webhook keeps it for its statistics (a delivery's says what failed). */
const deactivatedByCaller = (): Deactivation => ({ at: Date.now(), by: 'caller', reason: 'deactivated through the API' });

export async function createWebhook(account: string, input: CreateWebhookInput): Promise<Webhook> {
  assertChainFollowed(input.chainId);
  // The id and createdAt come from one clock reading, so id order and createdAt order never disagree.
  const id = uuidv7();
  const webhook: Webhook = {
    id,
    url: input.url,
    chainId: input.chainId,
    status: 'active',
    createdAt: uuidv7Time(id),
    name: input.name,
    description: input.description,
    eventType: input.eventType,
    metadata: { eventSignatures: input.metadata.eventSignatures, addresses: [] },
    includeInternalTxs: input.includeInternalTxs,
    includeLogs: input.includeLogs,
  };
  await countNewWebhook(account, id, input.metadata.addresses.length);
  return storeNewWebhook(account, webhook, input.metadata.addresses).catch(async (error: unknown) => {
    // Should this fail too, the count is dropped as a leftover when it would refuse a creation.
    await uncountUnstoredWebhook(account, id).catch(() => undefined);
    throw error;
  });
}

export async function getWebhook(account: string, id: string): Promise<Webhook> {
  return (await getWebhookItem(account, id)) ?? Promise.reject(notFound(id));
}

/**
 * Activating a webhook also has the messages that waited while it was inactive queued again, and
 * forgets why it was inactive. A URL at another origin is another endpoint, with its own health
 * (lib/store/endpoint-health.ts).
 */
export async function updateWebhook(account: string, id: string, input: UpdateWebhookInput): Promise<Webhook> {
  if (input.status === 'active') await requestResume(account, id);
  const updated = await updateWebhookItem(account, id, webhookChanges(input), input.status === 'inactive' ? deactivatedByCaller() : undefined);
  if (!updated) throw notFound(id);
  return updated;
}

/**
 * The hosted API's deactivateWebhook: the webhook stays, inactive (a PATCH reactivates it), and the
 * response shows it as it now is. `permanent` is ours: the webhook is removed at once (its addresses
 * in the background), and the response shows it as it was.
 */
export async function deleteWebhook(account: string, id: string, { permanent }: DeleteWebhookQuery): Promise<Webhook> {
  if (!permanent) return (await updateWebhookItem(account, id, { status: 'inactive' }, deactivatedByCaller())) ?? Promise.reject(notFound(id));
  const deleted = await deleteWebhookPermanently(account, id);
  return deleted ? toWebhook(deleted) : Promise.reject(notFound(id));
}

/**
 * One page, newest first. Reads one item beyond the page to learn whether another page follows,
 * so the last page never carries a token and no page is short while more remain.
 */
export async function listWebhooks(account: string, { pageSize, status, pageToken }: ListWebhooksQuery): Promise<WebhookList> {
  const key = await pageTokenKey();
  const scope = { account, status };
  const afterId = pageToken === undefined ? undefined : pageTokens.webhooks.decode(key, scope, pageToken);
  const { webhooks } = await queryWebhooks({ account, status, limit: pageSize + 1, afterId });
  if (webhooks.length <= pageSize) return { webhooks };
  const page = webhooks.slice(0, pageSize);
  return { webhooks: page, nextPageToken: pageTokens.webhooks.encode(key, scope, page[page.length - 1]!.id) };
}
