import { api } from '../lib/http/api';
import { routes } from '../lib/routes';
import { deleteWebhook } from '../lib/webhooks/webhooks';

export const handler = api(routes.deleteWebhook, ({ account, path, query }) => deleteWebhook(account, path.id, query));
