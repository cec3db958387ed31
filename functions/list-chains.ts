import { listFollowedChains } from '../lib/chains/followed-chains';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.listChains, () => listFollowedChains());
