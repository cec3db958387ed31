import { getWebhookStats } from '../lib/deliveries/stats-report';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.getWebhookStats, ({ account, path, query }) => getWebhookStats(account, path.id, query));
