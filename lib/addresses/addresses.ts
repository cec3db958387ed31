import { pageTokenKey } from '../config/page-token-key';
import { pageTokens } from '../page-token';
import type { AddressesInput, AddressList, ListAddressesQuery } from '../schemas/addresses';
import type { Webhook } from '../schemas/webhook';
import { randomUUID } from 'node:crypto';
import {
  deleteAddressChange,
  getWebhookAddressState,
  putAddressChange,
  queryWebhookAddresses,
  type AddressChange,
} from '../store/addresses';
import { WRITE_BATCH_SIZE, writeItems } from '../store/batch';
import { webhookPointerWrite } from '../store/webhook-pointers';
import { webhookItem } from '../store/webhooks';
import { webhookNotFound } from '../errors';
import { changeAddresses, changeWrites, firstAddressesOf } from './address-changes';

export const addAddresses = (account: string, id: string, { addresses }: AddressesInput): Promise<Webhook> =>
  changeAddresses(account, id, 'add', addresses);

export const removeAddresses = (account: string, id: string, { addresses }: AddressesInput): Promise<Webhook> =>
  changeAddresses(account, id, 'remove', addresses);

/**
 * Stores a new webhook with its addresses and its pointer, so that the webhook exists only once all
 * of its addresses and their index entries do: a crash leaves items of a webhook nobody was told of,
 * never a webhook missing some of them. The address, watcher and pointer items go first; then the
 * heads (after their watchers, as for any change) and the webhook's item. When those fit one batch
 * they go together: one request fewer for most creates. Should DynamoDB leave part of that batch
 * unprocessed, a change record is written before the retry, so that a crash before the retry is
 * completed like any interrupted change. Returns the webhook as shown, first addresses in order.
 */
export async function storeNewWebhook(account: string, webhook: Webhook, addresses: string[]): Promise<Webhook> {
  const [ownAndWatchers, heads] = changeWrites({ account, webhookId: webhook.id, chainId: webhook.chainId, kind: 'add', addresses });
  await writeItems([webhookPointerWrite(webhook.id, account), ...ownAndWatchers!]);
  const shown = { ...webhook, metadata: { ...webhook.metadata, addresses: firstAddressesOf(addresses) } };
  const webhookWrite = { put: webhookItem(account, shown, addresses.length) };
  if (heads!.length >= WRITE_BATCH_SIZE) {
    await writeItems(heads!);
    await writeItems([webhookWrite]);
    return shown;
  }
  // Made only when DynamoDB leaves part of the batch unprocessed: most creates never need one.
  let change: AddressChange | undefined;
  await writeItems([...heads!, webhookWrite], {
    beforeRetry: async () => {
      change = { id: randomUUID(), account, webhookId: webhook.id, chainId: webhook.chainId, kind: 'add', addresses, delta: 0, startedAt: Date.now() };
      await putAddressChange(change);
    },
  });
  if (change) await deleteAddressChange(change);
  return shown;
}

/**
 * One page of the webhook's addresses in address order, and how many it has. Reads one address
 * beyond the page to learn whether another page follows, as the webhook list does.
 */
export async function listAddresses(account: string, id: string, { pageSize, pageToken }: ListAddressesQuery): Promise<AddressList> {
  const key = await pageTokenKey();
  const after = pageToken === undefined ? undefined : pageTokens.addresses.decode(key, { account, webhookId: id }, pageToken);
  const state = await getWebhookAddressState(account, id);
  if (!state) throw webhookNotFound(id);
  const { addresses } = await queryWebhookAddresses(account, id, pageSize + 1, after);
  if (addresses.length <= pageSize) return { addresses, totalAddresses: state.addressCount };
  const page = addresses.slice(0, pageSize);
  return { addresses: page, totalAddresses: state.addressCount, nextPageToken: pageTokens.addresses.encode(key, { account, webhookId: id }, page.at(-1)!) };
}
