import { api } from '../lib/http/api';
import { routes } from '../lib/routes';
import { getSharedSecret } from '../lib/secrets/shared-secret';

export const handler = api(routes.getSharedSecret, ({ account }) => getSharedSecret(account));
