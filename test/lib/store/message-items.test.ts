import { recordNotifications, listDeliveries } from '../../../lib/deliveries/messages';
import { NO_QUEUE } from '../../../lib/deliveries/queue';
import { prepareDelivery } from '../../../lib/deliveries/deliver';
import { runtimeConfig } from '../../../lib/config/runtime';
import { dynamoDb, tableName } from '../../../lib/store/client';
import { deleteItem, getItem, putItem, updateItem } from '../../../lib/store/items';
import {
  claimMessage,
  LOOKED_AT_PER_CALL,
  getMessage,
  moveMessagesToStatusIndex,
  parkMessage,
  queryMessages,
  queryParkedMessages,
  recordAttempt,
  rescheduleMessage,
  spreadMessagePartitions,
  type MessageRef,
} from '../../../lib/store/messages';
import { forEachChunk } from '../../../lib/store/batch';
import { messageBodyKey, messageKey, messagePartitionsMarkKey, messageStatusIndexMarkKey, messageStatusPartition, retentionEndOf } from '../../../lib/store/table';
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

it('leaves a message out of the status index until it fails: delivered or retrying, it is listed from the log; retried by hand, it leaves the index again', async () => {
  const webhook = await newWebhook();
  const [delivered, failed, retrying] = await record(webhook, 3);
  for (const ref of [delivered!, failed!, retrying!]) expect((await stateOf(ref))!.gsi2pk).toBeUndefined();
  await finish(delivered!, 'succeeded');
  await finish(failed!, 'failed');
  const message = (await getMessage(retrying!))!;
  const now = Date.now();
  expect(await claimMessage(retrying!, message.nextAttemptAt!, now, now + 15_000, message.sweepAt)).toBe(true);
  const attempt = { attemptedAt: now, trigger: 'scheduled' as const, statusCode: 500, durationMs: 3 };
  expect(await recordAttempt(message, now + 15_000, attempt, { status: 'pending', nextAttemptAt: now + 60_000, sweepAt: now + 120_000 })).toBe(true);
  expect((await stateOf(delivered!))!.gsi2pk).toBeUndefined();
  expect((await stateOf(retrying!))!.gsi2pk).toBeUndefined();
  expect((await stateOf(failed!))!.gsi2pk).toBe(messageStatusPartition(webhook.account, webhook.webhookId, 'failed'));
  const ids = async (status: 'pending' | 'succeeded' | 'failed') => (await queryMessages({ ...webhook, status, limit: 10 })).messages.map((listed) => listed.messageId);
  expect(await ids('succeeded')).toEqual([delivered!.messageId]);
  expect(await ids('failed')).toEqual([failed!.messageId]);
  expect(await ids('pending')).toEqual([retrying!.messageId]);

  expect(await rescheduleMessage(failed!, { at: now, sweepAt: now + 60_000, now, manual: true, seenStatus: 'failed' })).toBe(true);
  expect((await stateOf(failed!))!.gsi2pk).toBeUndefined();
  expect(await ids('failed')).toEqual([]);
  expect(await ids('pending')).toEqual([retrying!.messageId, failed!.messageId]);
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
  expect(await parkMessage(message, message.nextAttemptAt!, Date.now())).toBe(true);
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
  await forEachChunk(Array.from({ length: LOOKED_AT_PER_CALL + 10 }, (_, index) => index), 50, 4, async (chunk) => {
    newer.push(...(await record(webhook, chunk.length)));
  });
  const first = await listDeliveries(webhook.account, webhook.webhookId, { pageSize: 10, status: 'succeeded' });
  expect(first.deliveries).toEqual([]);
  expect(first.nextPageToken).toEqual(expect.any(String));
  const second = await listDeliveries(webhook.account, webhook.webhookId, { pageSize: 10, status: 'succeeded', pageToken: first.nextPageToken });
  expect(second.deliveries.map((delivery) => delivery.messageId)).toEqual([older!.messageId]);
  expect(second.nextPageToken).toBeUndefined();
}, 60_000);

it("spreads a webhook's log over its partitions and pages through it newest first, every message once, whatever the page size and filter", async () => {
  const webhook = await newWebhook();
  const refs = await record(webhook, 40);
  const partitions = new Set(await Promise.all(refs.map(async (ref) => (await stateOf(ref))!.pk as string)));
  expect(partitions.size).toBeGreaterThan(4);
  for (const ref of refs.filter((_, index) => index % 3 === 0)) await finish(ref, 'succeeded');
  const newestFirst = (ids: string[]) => [...ids].sort().reverse();
  const pages = async (status: 'pending' | 'succeeded' | undefined, pageSize: number) => {
    const ids: string[] = [];
    let afterId: string | undefined;
    for (;;) {
      const { messages, lookedUpTo } = await queryMessages({ ...webhook, status, limit: pageSize, afterId });
      ids.push(...messages.map((message) => message.messageId));
      afterId = messages.length === pageSize ? messages.at(-1)!.messageId : lookedUpTo;
      if (afterId === undefined) return ids;
    }
  };
  const all = refs.map((ref) => ref.messageId);
  const delivered = all.filter((_, index) => index % 3 === 0);
  for (const pageSize of [1, 7, 50]) {
    expect(await pages(undefined, pageSize)).toEqual(newestFirst(all));
    expect(await pages('succeeded', pageSize)).toEqual(newestFirst(delivered));
    expect(await pages('pending', pageSize)).toEqual(newestFirst(all.filter((id) => !delivered.includes(id))));
  }
});

it("moves the messages of an earlier layout (one partition per webhook) to the webhook's partitions once, bodies too", async () => {
  const webhook = await newWebhook();
  const [pending, delivered] = await record(webhook, 2);
  await finish(delivered!, 'succeeded');
  const unspread = `${messageKey(webhook.account, webhook.webhookId, '0').pk.replace(/#\d+$/, '')}`;
  for (const ref of [pending!, delivered!]) {
    for (const key of [messageKey(ref.account, ref.webhookId, ref.messageId), messageBodyKey(ref.account, ref.webhookId, ref.messageId)]) {
      const item = (await getItem({ TableName: tableName(), Key: key, ConsistentRead: true }))!;
      await deleteItem({ TableName: tableName(), Key: key });
      await putItem({ TableName: tableName(), Item: { ...item, pk: unspread } });
    }
  }
  await deleteItem({ TableName: tableName(), Key: messagePartitionsMarkKey });
  expect(await getMessage(pending!)).toBeUndefined();

  expect(await spreadMessagePartitions(dynamoDb(), tableName(), { created: false })).toBeGreaterThanOrEqual(4);
  expect((await getMessage(pending!))!.status).toBe('pending');
  expect((await getMessage(delivered!))!.status).toBe('succeeded');
  expect((await queryMessages({ ...webhook, limit: 10 })).messages.map((message) => message.messageId)).toEqual([delivered!.messageId, pending!.messageId]);
  expect(await spreadMessagePartitions(dynamoDb(), tableName(), { created: false })).toBe(0);
});

it('deletes a pending message whose body has expired instead of taking it up again and again', async () => {
  const [ref] = await record(await newWebhook());
  await deleteItem({ TableName: tableName(), Key: messageBodyKey(ref!.account, ref!.webhookId, ref!.messageId) });
  expect(await prepareDelivery(ref!, NO_QUEUE)).toEqual({ kind: 'none' });
  expect(await stateOf(ref!)).toBeUndefined();
});

it('gives a body its expiry back when its message could not be parked (an attempt holds it)', async () => {
  const [ref] = await record(await newWebhook());
  const message = (await getMessage(ref!))!;
  const now = Date.now();
  expect(await claimMessage(ref!, message.nextAttemptAt!, now, now + 15_000, message.sweepAt)).toBe(true);
  expect(await parkMessage(message, message.nextAttemptAt!, now)).toBe(false);
  expect((await bodyItemOf(ref!))!.expiresAt).toBe(retentionEndOf(message.createdAt));
});

it('lets a body kept for a parking expire when the message finishes, even if the attempt read it before it was parked', async () => {
  const [ref] = await record(await newWebhook());
  const stale = (await getMessage(ref!))!;
  expect(await parkMessage(stale, stale.nextAttemptAt!, Date.now())).toBe(true);
  expect((await bodyItemOf(ref!))!.expiresAt).toBeUndefined();
  const now = Date.now();
  expect(await claimMessage(ref!, stale.nextAttemptAt!, now, now + 15_000)).toBe(true);
  const attempt = { attemptedAt: now, trigger: 'scheduled' as const, statusCode: 200, durationMs: 3 };
  expect(await recordAttempt(stale, now + 15_000, attempt, { status: 'succeeded', expiresAt: retentionEndOf(stale.createdAt) })).toBe(true);
  expect((await bodyItemOf(ref!))!.expiresAt).toBe(retentionEndOf(stale.createdAt));
});

it('reads a message recorded before bodies had an item of their own, its body inline, and sends it', async () => {
  const [ref] = await record(await newWebhook());
  const body = (await getMessage(ref!))!.body;
  await deleteItem({ TableName: tableName(), Key: messageBodyKey(ref!.account, ref!.webhookId, ref!.messageId) });
  await updateItem({ TableName: tableName(), Key: messageKey(ref!.account, ref!.webhookId, ref!.messageId), UpdateExpression: 'SET body = :body', ExpressionAttributeValues: { ':body': body } });
  expect((await getMessage(ref!))!.body).toBe(body);
  const prepared = await prepareDelivery(ref!, NO_QUEUE);
  if (prepared.kind !== 'ready') throw new Error('not ready');
  expect(prepared.delivery.message.body).toBe(body);
});

it("moves the messages of an earlier layout (status in gsi1) to the status index once: a parked one is resumed, a failed one listed", async () => {
  const webhook = await newWebhook();
  const [parked, failed, delivered] = await record(webhook, 3);
  const message = (await getMessage(parked!))!;
  expect(await parkMessage(message, message.nextAttemptAt!, Date.now())).toBe(true);
  await finish(failed!, 'failed');
  await finish(delivered!, 'succeeded');
  const legacy = async (ref: MessageRef, status: string) =>
    updateItem({
      TableName: tableName(),
      Key: messageKey(ref.account, ref.webhookId, ref.messageId),
      UpdateExpression: 'SET gsi1pk = :gsi1pk, gsi1sk = :gsi1sk REMOVE gsi2pk',
      ExpressionAttributeValues: { ':gsi1pk': `${messageKey(ref.account, ref.webhookId, '').pk}#${status}`, ':gsi1sk': `MESSAGE#${ref.messageId}` },
    });
  await Promise.all([legacy(parked!, 'pending'), legacy(failed!, 'failed'), legacy(delivered!, 'succeeded')]);
  await deleteItem({ TableName: tableName(), Key: messageStatusIndexMarkKey });
  expect((await queryParkedMessages(webhook.account, webhook.webhookId)).messages).toEqual([]);

  expect(await moveMessagesToStatusIndex(dynamoDb(), tableName(), { created: false })).toBeGreaterThanOrEqual(3);
  expect((await queryParkedMessages(webhook.account, webhook.webhookId)).messages.map((moved) => moved.messageId)).toEqual([parked!.messageId]);
  expect((await queryMessages({ ...webhook, status: 'failed', limit: 10 })).messages.map((moved) => moved.messageId)).toEqual([failed!.messageId]);
  for (const ref of [parked!, failed!, delivered!]) expect((await stateOf(ref))!.gsi1pk).toBeUndefined();
  expect(await moveMessagesToStatusIndex(dynamoDb(), tableName(), { created: false })).toBe(0);
});
