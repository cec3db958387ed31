import { addAddresses } from '../lib/addresses/addresses';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.addAddressesToWebhook, ({ account, path, body }) => addAddresses(account, path.id, body));
