import { getBackfill } from '../lib/backfills/backfills';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.getBackfill, ({ account, path }) => getBackfill(account, path.id, path.backfillId));
