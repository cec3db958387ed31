import { api } from '../lib/http/api';
import { routes } from '../lib/routes';
import { generateOrRotateSharedSecret } from '../lib/secrets/shared-secret';

export const handler = api(routes.generateOrRotateSharedSecret, ({ account, query }) => generateOrRotateSharedSecret(account, query));
