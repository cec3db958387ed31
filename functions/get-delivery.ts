import { getDelivery } from '../lib/deliveries/messages';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.getDelivery, ({ account, path }) => getDelivery(account, path.id, path.messageId));
