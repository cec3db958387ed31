import { api } from '../lib/http/api';
import { listAccountApiKeys } from '../lib/keys/account-api-keys';
import { routes } from '../lib/routes';

export const handler = api(routes.listApiKeys, ({ account, callerKeyId, query }) => listAccountApiKeys(account, callerKeyId, query));
