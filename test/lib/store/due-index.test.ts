import { recordNotifications } from '../../../lib/deliveries/messages';
import { NO_QUEUE } from '../../../lib/deliveries/queue';
import { dueMessages } from '../../../lib/deliveries/sweep';
import { tableName } from '../../../lib/store/client';
import { getItem } from '../../../lib/store/items';
import { claimMessage, getMessage } from '../../../lib/store/messages';
import { dueIndexShards, messageDueIndexKey, messageKey } from '../../../lib/store/table';
import { createWebhook } from '../../../lib/webhooks/webhooks';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../../support/factories';

useEmbeddedStore({ DELIVERY_SWEEP_GRACE_SECONDS: '120', DELIVERY_TIMEOUT_SECONDS: '2' });

async function recordedMessage() {
  const account = randomAccount();
  const webhook = await createWebhook(account, webhookInput({ url: 'https://receiver.example.com/hooks', metadata: { addresses: [randomAddress()] } }) as never);
  const [messageId] = await recordNotifications(account, webhook.id, [{ eventType: 'address_activity', event: { transaction: {} } }], NO_QUEUE);
  const ref = { account, webhookId: webhook.id, messageId: messageId! };
  return { ref, message: (await getMessage(ref))! };
}

const indexEntry = async (ref: { account: string; webhookId: string; messageId: string }) => {
  const item = await getItem({ TableName: tableName(), Key: messageKey(ref.account, ref.webhookId, ref.messageId), ConsistentRead: true });
  return { gsi3pk: item!.gsi3pk, gsi3sk: item!.gsi3sk, sweepAt: item!.sweepAt };
};

it('claims a message whose sweep time is after the claim without writing its due-time index entry', async () => {
  const { ref, message } = await recordedMessage();
  const before = await indexEntry(ref);
  const now = Date.now();
  expect(await claimMessage(ref, message.nextAttemptAt!, now, now + 10_000, message.sweepAt)).toBe(true);
  expect(await indexEntry(ref)).toEqual(before);
  expect((await getMessage(ref))!.claimedUntil).toBe(now + 10_000);
});

it('moves the sweep time of a message claimed past it to the end of the claim', async () => {
  const { ref, message } = await recordedMessage();
  const now = Date.now();
  const until = message.sweepAt! + 60_000;
  expect(await claimMessage(ref, message.nextAttemptAt!, now, until, message.sweepAt)).toBe(true);
  expect(await indexEntry(ref)).toEqual({ ...messageDueIndexKey(ref.messageId, until), sweepAt: until });
  expect(await dueMessages(until - 1, 1000)).not.toContainEqual(ref);
});

it("puts a message in one of the stage's due-time shards, by its id's last 12 bits", () => {
  const id = '01939b2c-0000-7000-8000-000000000fff';
  expect(messageDueIndexKey(id, 0).gsi3pk).toBe(`DUE#${0xfff % dueIndexShards()}`);
});
