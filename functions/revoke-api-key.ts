import { api } from '../lib/http/api';
import { revokeAccountApiKey } from '../lib/keys/account-api-keys';
import { routes } from '../lib/routes';

export const handler = api(routes.revokeApiKey, ({ account, callerKeyId, path }) => revokeAccountApiKey(account, callerKeyId, path.keyId));
