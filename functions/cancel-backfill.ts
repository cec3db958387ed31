import { cancelBackfill } from '../lib/backfills/backfills';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.cancelBackfill, ({ account, path }) => cancelBackfill(account, path.id, path.backfillId));
