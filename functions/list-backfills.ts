import { listBackfills } from '../lib/backfills/backfills';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.listBackfills, ({ account, path, query }) => listBackfills(account, path.id, query));
