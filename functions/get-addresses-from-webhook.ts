import { listAddresses } from '../lib/addresses/addresses';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.getAddressesFromWebhook, ({ account, path, query }) => listAddresses(account, path.id, query));
