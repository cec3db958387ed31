import { listDeliveries } from '../lib/deliveries/messages';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.listDeliveries, ({ account, path, query }) => listDeliveries(account, path.id, query));
