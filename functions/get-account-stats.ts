import { getAccountStats } from '../lib/deliveries/stats-report';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.getAccountStats, ({ account, query }) => getAccountStats(account, query));
