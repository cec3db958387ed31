import { recordNotifications, listDeliveries } from '../../../lib/deliveries/messages';
import { NO_QUEUE } from '../../../lib/deliveries/queue';
import { runtimeConfig } from '../../../lib/config/runtime';
import { tableName } from '../../../lib/store/client';
import { getItem } from '../../../lib/store/items';
import {
  claimMessage,
  DELIVERED_LOOKED_AT_PER_CALL,
  getMessage,
  parkMessage,
  queryMessages,
  recordAttempt,
  retentionEndOf,
  type MessageRef,
} from '../../../lib/store/messages';
import { inChunks } from '../../../lib/store/batch';
import { messageBodyKey, messageKey, messageStatusPartition } from '../../../lib/store/table';
import { createWebhook } from '../../../lib/webhooks/webhooks';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../../support/factories';

useEmbeddedStore();

async function newWebhook() {
  const account = randomAccount();
  const webhook = await createWebhook(account, webhookInput({ url: 'https://receiver.example.com/hooks', metadata: { addresses: [randomAddress()] } }) as never);
  return { account, webhookId: webhook.id };
}

async function record({ account, webhookId }: { account: string; webhookId: string }, count = 1): Promise<MessageRef[]> {
  const notifications = Array.from({ length: count }, (_, index) => ({ eventType: 'address_activity', event: { transaction: { index } } }));
  const ids = await recordNotifications(account, webhookId, notifications, NO_QUEUE);
  return ids.map((messageId) => ({ account, webhookId, messageId }));
}

const stateOf = (ref: MessageRef) => getItem({ TableName: tableName(), Key: messageKey(ref.account, ref.webhookId, ref.messageId), ConsistentRead: true });
const bodyItemOf = (ref: MessageRef) => getItem({ TableName: tableName(), Key: messageBodyKey(ref.account, ref.webhookId, ref.messageId), ConsistentRead: true });

/** One attempt of the message recorded with `status`, as the consumer records it. */
async function finish(ref: MessageRef, status: 'succeeded' | 'failed') {
  const message = (await getMessage(ref))!;
  const now = Date.now();
  expect(await claimMessage(ref, message.nextAttemptAt!, now, now + 15_000, message.sweepAt)).toBe(true);
  const attempt = { attemptedAt: now, trigger: 'scheduled' as const, statusCode: status === 'succeeded' ? 200 : 500, durationMs: 3 };
  expect(await recordAttempt(message, now + 15_000, attempt, { status, expiresAt: retentionEndOf(message.createdAt) })).toBe(true);
}

it('records a message as a state item and a body item (the event compressed, expiring with the retention), and reads the body back whole', async () => {
  const [ref] = await record(await newWebhook());
  const [state, bodyItem] = await Promise.all([stateOf(ref!), bodyItemOf(ref!)]);
  expect(state!.body).toBeUndefined();
  expect(bodyItem!.event).toBeInstanceOf(Uint8Array);
  expect(bodyItem!.expiresAt).toBe(retentionEndOf(state!.createdAt as number));
  const message = (await getMessage(ref!))!;
  expect(JSON.parse(message.body)).toEqual({ event: { transaction: { index: 0 } }, eventType: 'address_activity', messageId: ref!.messageId, webhookId: ref!.webhookId });
});

it('keeps a message in the status index while pending or failed, and takes it out once delivered', async () => {
  const webhook = await newWebhook();
  const [delivered, failed] = await record(webhook, 2);
  expect((await stateOf(delivered!))!.gsi2pk).toBe(messageStatusPartition(webhook.account, webhook.webhookId, 'pending'));
  await finish(delivered!, 'succeeded');
  await finish(failed!, 'failed');
  expect((await stateOf(delivered!))!.gsi2pk).toBeUndefined();
  expect((await stateOf(failed!))!.gsi2pk).toBe(messageStatusPartition(webhook.account, webhook.webhookId, 'failed'));
  const ids = async (status: 'pending' | 'succeeded' | 'failed') => (await queryMessages({ ...webhook, status, limit: 10 })).messages.map((message) => message.messageId);
  expect(await ids('succeeded')).toEqual([delivered!.messageId]);
  expect(await ids('failed')).toEqual([failed!.messageId]);
  expect(await ids('pending')).toEqual([]);
});

it('moves a finished message to the expiry entries where the store has no TTL, and out of the due-time index where it has', async () => {
  const webhook = await newWebhook();
  const [local, aws] = await record(webhook, 2);
  await finish(local!, 'succeeded');
  expect((await stateOf(local!))!.gsi3pk).toMatch(/^EXPIRES#/);
  const config = runtimeConfig();
  const before = config.storeDeletesExpiredItems;
  config.storeDeletesExpiredItems = true;
  try {
    await finish(aws!, 'succeeded');
  } finally {
    config.storeDeletesExpiredItems = before;
  }
  const state = (await stateOf(aws!))!;
  expect(state.gsi3pk).toBeUndefined();
  expect(state.gsi3sk).toBeUndefined();
  expect(state.expiresAt).toBe(retentionEndOf(state.createdAt as number));
});

it("keeps a parked message's body past the retention while it waits, and lets it expire with the message once finished", async () => {
  const [ref] = await record(await newWebhook());
  const message = (await getMessage(ref!))!;
  expect(await parkMessage(ref!, message.nextAttemptAt!, Date.now())).toBe(true);
  expect((await bodyItemOf(ref!))!.expiresAt).toBeUndefined();
  expect((await getMessage(ref!))!.bodyKept).toBe(true);
  await finish(ref!, 'succeeded');
  expect((await bodyItemOf(ref!))!.expiresAt).toBe(retentionEndOf(message.createdAt));
  expect((await getMessage(ref!))!.bodyKept).toBeUndefined();
});

it('lists delivered messages past at most a bounded number of others a call: a short page with a token, and the next page goes on from there', async () => {
  const webhook = await newWebhook();
  const [older] = await record(webhook);
  await finish(older!, 'succeeded');
  const newer: MessageRef[] = [];
  await inChunks(Array.from({ length: DELIVERED_LOOKED_AT_PER_CALL + 10 }, (_, index) => index), 50, 4, async (chunk) => {
    newer.push(...(await record(webhook, chunk.length)));
  });
  const first = await listDeliveries(webhook.account, webhook.webhookId, { pageSize: 10, status: 'succeeded' });
  expect(first.deliveries).toEqual([]);
  expect(first.nextPageToken).toEqual(expect.any(String));
  const second = await listDeliveries(webhook.account, webhook.webhookId, { pageSize: 10, status: 'succeeded', pageToken: first.nextPageToken });
  expect(second.deliveries.map((delivery) => delivery.messageId)).toEqual([older!.messageId]);
  expect(second.nextPageToken).toBeUndefined();
}, 60_000);
