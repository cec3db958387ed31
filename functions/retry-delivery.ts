import { retryDelivery } from '../lib/deliveries/messages';
import { deliveryQueueSender } from '../lib/deliveries/sqs-queue';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.retryDelivery, ({ account, path }) => retryDelivery(account, path.id, path.messageId, deliveryQueueSender()));
