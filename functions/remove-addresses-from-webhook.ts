import { removeAddresses } from '../lib/addresses/addresses';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.removeAddressesFromWebhook, ({ account, path, body }) => removeAddresses(account, path.id, body));
