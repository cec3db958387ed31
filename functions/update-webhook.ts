import { api } from '../lib/http/api';
import { routes } from '../lib/routes';
import { updateWebhook } from '../lib/webhooks/webhooks';

export const handler = api(routes.updateWebhook, ({ account, path, body }) => updateWebhook(account, path.id, body));
