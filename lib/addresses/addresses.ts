import { pageTokenKey } from '../config/page-token-key';
import { decodeAddressPageToken, encodeAddressPageToken } from '../page-token';
import type { AddressesInput, AddressList, ListAddressesQuery } from '../schemas/addresses';
import type { Webhook } from '../schemas/webhook';
import { getWebhookAddressState, queryWebhookAddresses } from '../store/addresses';
import { writeItems } from '../store/batch';
import { webhookPointerKey } from '../store/table';
import { putNewWebhook } from '../store/webhooks';
import { changeAddresses, changeWrites, FIRST_ADDRESSES_SHOWN, webhookNotFound } from './address-changes';

export const addAddresses = (account: string, id: string, { addresses }: AddressesInput): Promise<Webhook> =>
  changeAddresses(account, id, 'add', addresses);

export const removeAddresses = (account: string, id: string, { addresses }: AddressesInput): Promise<Webhook> =>
  changeAddresses(account, id, 'remove', addresses);

/**
 * Stores a new webhook with its addresses and its pointer. The addresses and the matcher's index go
 * first and the webhook's item last, so that the webhook exists only once all of them do: a crash in between
 * leaves items of a webhook nobody was told of, never a webhook missing some of its addresses.
 * Returns the webhook as shown, with its first addresses in address order.
 */
export async function storeNewWebhook(account: string, webhook: Webhook, addresses: string[]): Promise<Webhook> {
  const [ownAndWatchers, heads] = changeWrites({ account, webhookId: webhook.id, chainId: webhook.chainId, kind: 'add', addresses });
  await writeItems([{ put: { ...webhookPointerKey(webhook.id), account } }, ...ownAndWatchers!]);
  await writeItems(heads!);
  const shown = { ...webhook, metadata: { ...webhook.metadata, addresses: [...addresses].sort().slice(0, FIRST_ADDRESSES_SHOWN) } };
  await putNewWebhook(account, shown, addresses.length);
  return shown;
}

/**
 * One page of the webhook's addresses in address order, and how many it has. Reads one address
 * beyond the page to learn whether another page follows, as the webhook list does.
 */
export async function listAddresses(account: string, id: string, { pageSize, pageToken }: ListAddressesQuery): Promise<AddressList> {
  const key = await pageTokenKey();
  const after = pageToken === undefined ? undefined : decodeAddressPageToken(key, account, id, pageToken);
  const state = await getWebhookAddressState(account, id);
  if (!state) throw webhookNotFound(id);
  const { addresses } = await queryWebhookAddresses(account, id, pageSize + 1, after);
  if (addresses.length <= pageSize) return { addresses, totalAddresses: state.addressCount };
  const page = addresses.slice(0, pageSize);
  return { addresses: page, totalAddresses: state.addressCount, nextPageToken: encodeAddressPageToken(key, account, id, page.at(-1)!) };
}
