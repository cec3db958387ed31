import { api } from '../lib/http/api';
import { revokeAccountApiKey } from '../lib/keys/account-api-keys';
import { routes } from '../lib/routes';

export const handler = api(routes.revokeApiKey, ({ account, keyId, path }) => revokeAccountApiKey(account, path.keyId, keyId));
