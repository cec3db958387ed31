import { api } from '../lib/http/api';
import { createAccountApiKey } from '../lib/keys/account-api-keys';
import { routes } from '../lib/routes';

export const handler = api(routes.createApiKey, ({ account, callerKeyId, body }) => createAccountApiKey(account, callerKeyId, body));
