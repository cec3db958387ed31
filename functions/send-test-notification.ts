import { sendTestNotification } from '../lib/deliveries/messages';
import { deliveryQueueSender } from '../lib/deliveries/sqs-queue';
import { api } from '../lib/http/api';
import { routes } from '../lib/routes';

export const handler = api(routes.sendTestNotification, ({ account, path }) => sendTestNotification(account, path.id, deliveryQueueSender()));
