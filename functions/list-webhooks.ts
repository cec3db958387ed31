import { api } from '../lib/http/api';
import { routes } from '../lib/routes';
import { listWebhooks } from '../lib/webhooks/webhooks';

export const handler = api(routes.listWebhooks, ({ account, query }) => listWebhooks(account, query));
