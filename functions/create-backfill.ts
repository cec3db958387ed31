import { createBackfill } from '../lib/backfills/backfills';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.createBackfill, ({ account, path, body }) => createBackfill(account, path.id, body));
