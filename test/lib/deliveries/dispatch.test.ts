import { deliverQueued } from '../../../lib/deliveries/deliver';
import { recordNotifications } from '../../../lib/deliveries/messages';
import { deleteExpiredMessages, dueMessages } from '../../../lib/deliveries/sweep';
import { getMessage } from '../../../lib/store/messages';
import { createWebhook, deleteWebhook } from '../../../lib/webhooks/webhooks';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../../support/factories';
import { startReceiver, type Receiver } from '../../support/receiver';

// No dispatcher runs in this process: nothing is sent but what a test asks for, as when a queue
// message is lost. The sweep takes up a message 1 s after it is due.
useEmbeddedStore({ DELIVERY_SWEEP_GRACE_SECONDS: '1', DELIVERY_TIMEOUT_SECONDS: '2', DELIVERY_RETRY_SCHEDULE: '1' });

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

async function recordedMessage() {
  const account = randomAccount();
  const webhook = await createWebhook(account, webhookInput({ url: receiver.url, metadata: { addresses: [randomAddress()] } }) as never);
  const [messageId] = await recordNotifications(account, webhook.id, [{ eventType: 'address_activity', event: { transaction: {} } }]);
  return { account, webhookId: webhook.id, messageId: messageId! };
}

const requestsFor = (messageId: string) => receiver.requests.filter((request) => JSON.parse(request.body).messageId === messageId);

it('records a message once under its id: recording it again changes nothing', async () => {
  const ref = await recordedMessage();
  const before = await getMessage(ref);
  await recordNotifications(ref.account, ref.webhookId, [{ eventType: 'address_activity', event: { other: true }, messageId: ref.messageId }]);
  expect(await getMessage(ref)).toEqual(before);
});

it('sends a message once when two dispatchers take it up at the same moment', async () => {
  const ref = await recordedMessage();
  await Promise.all([deliverQueued(ref), deliverQueued(ref), deliverQueued(ref)]);
  expect(requestsFor(ref.messageId)).toHaveLength(1);
  expect((await getMessage(ref))!.status).toBe('succeeded');
});

it('sweeps up a pending message whose queue message was lost, once per sweep time', async () => {
  const ref = await recordedMessage();
  const now = Date.now();
  expect(await dueMessages(now, 1000)).not.toContainEqual(ref);
  const due = await dueMessages(now + 1500, 1000);
  expect(due).toContainEqual(ref);
  // Handed over once: the next pass does not find it again until its new sweep time.
  expect(await dueMessages(now + 1500, 1000)).not.toContainEqual(ref);
  await deliverQueued(ref);
  expect(requestsFor(ref.messageId)).toHaveLength(1);
});

it('deletes a finished message once it has expired, and never a pending one', async () => {
  const finished = await recordedMessage();
  const pending = await recordedMessage();
  await deliverQueued(finished);
  const expiresAt = (await getMessage(finished))!.expiresAt!;
  expect(expiresAt).toBe(Math.floor((await getMessage(finished))!.createdAt / 1000) + 30 * 86_400);
  expect((await getMessage(pending))!.expiresAt).toBeUndefined();
  await deleteExpiredMessages(expiresAt * 1000 - 1000, Date.now() + 5000);
  expect(await getMessage(finished)).toBeDefined();
  await deleteExpiredMessages(expiresAt * 1000 + 1000, Date.now() + 5000);
  expect(await getMessage(finished)).toBeUndefined();
  expect(await getMessage(pending)).toBeDefined();
});

it('sends nothing for a webhook deleted for good, and deletes its message', async () => {
  const ref = await recordedMessage();
  await deleteWebhook(ref.account, ref.webhookId, { permanent: true });
  await deliverQueued(ref);
  expect(requestsFor(ref.messageId)).toHaveLength(0);
  expect(await getMessage(ref)).toBeUndefined();
});
