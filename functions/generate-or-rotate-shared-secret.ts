import { api } from '../lib/http/api';
import { routes } from '../lib/routes';
import { generateOrRotateSharedSecretWithKey } from '../lib/secrets/shared-secret';

export const handler = api(routes.generateOrRotateSharedSecret, ({ account, callerKeyId, query }) => generateOrRotateSharedSecretWithKey(account, callerKeyId, query));
