import { randomAddress } from '../../support/factories';
import { useLocalService } from '../../support/local-service';
import { addressesApi, type AddressPage } from './addresses-api';
import { webhooksApi } from './webhooks-api';

/**
 * The setup of the addresses API tests (addresses.test.ts and addresses.scale.test.ts): the local
 * service for the file, the webhooks and addresses APIs on it, and a new webhook to change.
 */
export function useAddressesService() {
  const client = useLocalService();
  const api = webhooksApi(client);
  /** A new account's key and a webhook of it watching `watched` (one random address by default). */
  async function newWebhook(watched: string[] = [randomAddress()]) {
    const key = await api.newAccountKey();
    const webhook = await api.create(key, { metadata: { addresses: watched } });
    return { key, webhook, id: webhook.id as string };
  }
  return { client, api, addresses: addressesApi(client), newWebhook };
}

/** The addresses of the pages, in order. */
export const allAddresses = (pages: AddressPage[]) => pages.flatMap((page) => page.addresses);
