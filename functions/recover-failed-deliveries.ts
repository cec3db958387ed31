import { recoverFailedDeliveries } from '../lib/deliveries/messages';
import { deliveryQueueSender } from '../lib/deliveries/sqs-queue';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.recoverFailedDeliveries, ({ account, path, body }) => recoverFailedDeliveries(account, path.id, body, deliveryQueueSender()));
