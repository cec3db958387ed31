import { api } from '../lib/http/api';
import { routes } from '../lib/routes';
import { createWebhook } from '../lib/webhooks/webhooks';

export const handler = api(routes.createWebhook, ({ account, body }) => createWebhook(account, body));
