import { api } from '../lib/http/api';
import { routes } from '../lib/routes';
import { getWebhook } from '../lib/webhooks/webhooks';

export const handler = api(routes.getWebhook, ({ account, path }) => getWebhook(account, path.id));
