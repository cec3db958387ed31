import { prepareDelivery } from '../../../lib/deliveries/deliver';
import { recordNotifications } from '../../../lib/deliveries/messages';
import { NO_QUEUE, type QueuedDelivery } from '../../../lib/deliveries/queue';
import { requestResume, RESUME_SETTLE_MS, runResumeJobs } from '../../../lib/deliveries/resume';
import { deleteExpiredMessages, dueMessages } from '../../../lib/deliveries/sweep';
import { randomBytes } from 'node:crypto';
import { verifyNotification } from '../../../lib/deliveries/signing';
import { generateOrRotateSharedSecret } from '../../../lib/secrets/shared-secret';
import { tableName } from '../../../lib/store/client';
import { getItem } from '../../../lib/store/items';
import { claimMessage, getMessage, MAX_STORED_BODY_BYTES, NotificationTooLarge, parkMessage, rescheduleMessage } from '../../../lib/store/messages';
import { messageBodyKey, messageKey, resumeJobKey } from '../../../lib/store/table';
import { updateWebhookItem } from '../../../lib/store/webhooks';
import { createWebhook, deleteWebhook, updateWebhook } from '../../../lib/webhooks/webhooks';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../../support/factories';
import { deliverNow } from '../../support/queue-records';
import { startReceiver, type Receiver } from '../../support/receiver';

// No consumer runs in this process: nothing is sent but what a test asks for, as when a queue
// message is lost. The sweep takes up a message 1 s after it is due.
useEmbeddedStore({
  DELIVERY_SWEEP_GRACE_SECONDS: '1',
  DELIVERY_TIMEOUT_SECONDS: '2',
  DELIVERY_RETRY_SCHEDULE: '1',
  DELIVERY_CONCURRENCY_PER_ACCOUNT: '2',
  DELIVERY_CONCURRENCY_PER_HOST: '2',
});

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
  const [messageId] = await recordNotifications(account, webhook.id, [{ eventType: 'address_activity', event: { transaction: {} } }], NO_QUEUE);
  return { account, webhookId: webhook.id, messageId: messageId! };
}

const requestsFor = (messageId: string) => receiver.requests.filter((request) => JSON.parse(request.body).messageId === messageId);

it('records a message once under its id: recording it again changes nothing', async () => {
  const ref = await recordedMessage();
  const before = await getMessage(ref);
  await recordNotifications(ref.account, ref.webhookId, [{ eventType: 'address_activity', event: { other: true }, messageId: ref.messageId }], NO_QUEUE);
  expect(await getMessage(ref)).toEqual(before);
});

describe('large notifications', () => {
  /** An event of about `bytes` of hex, as logs and transfers are: compressible, but not trivially. */
  const eventOf = (bytes: number) => ({ logs: Array.from({ length: Math.ceil(bytes / 200) }, (_, index) => ({ data: `0x${index.toString(16).padStart(8, '0')}${randomAddress().slice(2).repeat(4)}` })) });

  it('stores a large body as its event compressed in an item of its own, and sends and shows it whole', async () => {
    const account = randomAccount();
    const { secret } = await generateOrRotateSharedSecret(account);
    const webhook = await createWebhook(account, webhookInput({ url: receiver.url, metadata: { addresses: [randomAddress()] } }) as never);
    const event = eventOf(MAX_STORED_BODY_BYTES * 1.5);
    const [messageId] = await recordNotifications(account, webhook.id, [{ eventType: 'address_activity', event }], NO_QUEUE);
    const ref = { account, webhookId: webhook.id, messageId: messageId! };
    const state = await getItem({ TableName: tableName(), Key: messageKey(account, webhook.id, ref.messageId) });
    expect(state!.body).toBeUndefined();
    const stored = await getItem({ TableName: tableName(), Key: messageBodyKey(account, webhook.id, ref.messageId) });
    expect((stored!.event as Uint8Array).byteLength).toBeLessThan(MAX_STORED_BODY_BYTES);
    const message = await getMessage(ref);
    expect(Buffer.byteLength(message!.body)).toBeGreaterThan(MAX_STORED_BODY_BYTES);
    expect(JSON.parse(message!.body).event).toEqual(event);
    await deliverNow(ref);
    const [request] = requestsFor(ref.messageId);
    expect(request!.body).toBe(message!.body);
    expect(verifyNotification({ rawBody: request!.body, headers: request!.headers as Record<string, string>, secret })).toMatchObject({ xSignature: true, standardWebhooks: true });
  });

  it('records in place of a notification too large to store the event it fits to, and the others', async () => {
    const account = randomAccount();
    const webhook = await createWebhook(account, webhookInput({ url: receiver.url, metadata: { addresses: [randomAddress()] } }) as never);
    // Random hex does not compress below half: over MAX_STORED_BODY_BYTES gzipped.
    const incompressible = { data: `0x${randomBytes(MAX_STORED_BODY_BYTES * 2).toString('hex')}` };
    const cut = { data: '0x', omitted: { data: MAX_STORED_BODY_BYTES * 2 } };
    const ids = await recordNotifications(account, webhook.id, [
      { eventType: 'address_activity', event: incompressible, fitted: (fits) => (fits(incompressible) ? incompressible : cut) },
      { eventType: 'address_activity', event: { transaction: {} } },
    ], NO_QUEUE);
    expect(ids).toHaveLength(2);
    expect(JSON.parse((await getMessage({ account, webhookId: webhook.id, messageId: ids[0]! }))!.body).event).toEqual(cut);
  });

  it('fails on a notification too large to store that cannot be cut, rather than leave it out', async () => {
    const account = randomAccount();
    const webhook = await createWebhook(account, webhookInput({ url: receiver.url, metadata: { addresses: [randomAddress()] } }) as never);
    const incompressible = { data: `0x${randomBytes(MAX_STORED_BODY_BYTES * 2).toString('hex')}` };
    await expect(recordNotifications(account, webhook.id, [{ eventType: 'address_activity', event: incompressible }], NO_QUEUE)).rejects.toThrow(NotificationTooLarge);
  });
});

it('sends a message once when two dispatchers take it up at the same moment', async () => {
  const ref = await recordedMessage();
  await Promise.all([deliverNow(ref), deliverNow(ref), deliverNow(ref)]);
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
  await deliverNow(ref);
  expect(requestsFor(ref.messageId)).toHaveLength(1);
});

it('deletes a finished message once it has expired, and never a pending one', async () => {
  const finished = await recordedMessage();
  const pending = await recordedMessage();
  await deliverNow(finished);
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
  await deliverNow(ref);
  expect(requestsFor(ref.messageId)).toHaveLength(0);
  expect(await getMessage(ref)).toBeUndefined();
});

it('does not take a message from an attempt under way to hold it for its inactive webhook', async () => {
  const ref = await recordedMessage();
  const message = (await getMessage(ref))!;
  const now = Date.now();
  expect(await claimMessage(ref, message.nextAttemptAt!, now, now + 60_000)).toBe(true);
  await updateWebhook(ref.account, ref.webhookId, { status: 'inactive' });
  expect(await prepareDelivery(ref, NO_QUEUE, now + 100)).toEqual({ kind: 'none' });
  const held = await rescheduleMessage(ref, { at: now, sweepAt: now, now, manual: false, waitingForActivation: true, seenNextAttemptAt: message.nextAttemptAt });
  expect(held).toBe(false);
  expect((await getMessage(ref))!.claimedUntil).toBe(now + 60_000);
});

it("parks an inactive webhook's message out of the due-time index, and its activation's resume job queues it again", async () => {
  const ref = await recordedMessage();
  await updateWebhook(ref.account, ref.webhookId, { status: 'inactive' });
  expect(await prepareDelivery(ref, NO_QUEUE)).toEqual({ kind: 'none' });
  const parked = (await getMessage(ref))!;
  expect(parked).toMatchObject({ status: 'pending', waitingForActivation: true });
  expect(parked.sweepAt).toBeUndefined();
  // However long it waits, the sweep never reads it.
  expect(await dueMessages(Date.now() + 365 * 86_400_000, 1000)).not.toContainEqual(ref);

  await updateWebhook(ref.account, ref.webhookId, { status: 'active' });
  expect(await runResumeJobs(Date.now() + 5000, NO_QUEUE)).toBeGreaterThanOrEqual(1);
  const resumed = (await getMessage(ref))!;
  expect(resumed.waitingForActivation).toBeUndefined();
  expect(resumed.sweepAt).toBeDefined();
  await deliverNow(ref);
  expect(requestsFor(ref.messageId)).toHaveLength(1);
  // A message parked just before the activation, whose index entry shows only now (gsi2 is
  // eventually consistent on AWS): the job reads the parked ones once more when the index has
  // settled, not before, and then ends.
  const [lateId] = await recordNotifications(ref.account, ref.webhookId, [{ eventType: 'address_activity', event: { transaction: {} } }], NO_QUEUE);
  const late = (await getMessage({ ...ref, messageId: lateId! }))!;
  expect(await parkMessage(late, late.nextAttemptAt!, Date.now())).toBe(true);
  const job = () => getItem({ TableName: tableName(), Key: resumeJobKey(ref.webhookId), ConsistentRead: true });
  await runResumeJobs(Date.now() + 5000, NO_QUEUE);
  expect((await getMessage(late))!.waitingForActivation).toBe(true);
  expect(await job()).toBeDefined();
  // Only the clock moves on (timers stay real: the store's client needs them).
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'queueMicrotask', 'hrtime', 'performance'] });
  jest.setSystemTime(Date.now() + RESUME_SETTLE_MS);
  try {
    expect(await runResumeJobs(Date.now() + 5000, NO_QUEUE)).toBeGreaterThanOrEqual(1);
  } finally {
    jest.useRealTimers();
  }
  expect((await getMessage(late))!.waitingForActivation).toBeUndefined();
  expect(await job()).toBeUndefined();
});

it('a resume job run before its activation lands finds the webhook inactive yet, and looks again soon: the parked message goes once the webhook is active', async () => {
  const ref = await recordedMessage();
  await updateWebhook(ref.account, ref.webhookId, { status: 'inactive' });
  expect(await prepareDelivery(ref, NO_QUEUE)).toEqual({ kind: 'none' });
  // The activation's two writes, and a sweep between them.
  await requestResume(ref.account, ref.webhookId);
  expect(await runResumeJobs(Date.now() + 5000, NO_QUEUE)).toBe(0);
  await updateWebhookItem(ref.account, ref.webhookId, { status: 'active' });
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'queueMicrotask', 'hrtime', 'performance'] });
  jest.setSystemTime(Date.now() + 1_000);
  try {
    expect(await runResumeJobs(Date.now() + 5000, NO_QUEUE)).toBe(1);
  } finally {
    jest.useRealTimers();
  }
  expect((await getMessage(ref))!.waitingForActivation).toBeUndefined();
});

describe('the consumer', () => {
  it("holds at most its host's slots with a dead receiver, puts the rest off unattempted, the account's other webhooks at that host too, and serves another account meanwhile", async () => {
    const dead = await startReceiver(() => 'hang');
    try {
      const account = randomAccount();
      const deadWebhook = await createWebhook(account, webhookInput({ url: dead.url, metadata: { addresses: [randomAddress()] } }) as never);
      const fastWebhook = await createWebhook(account, webhookInput({ url: receiver.url, metadata: { addresses: [randomAddress()] } }) as never);
      const event = { eventType: 'address_activity', event: { transaction: {} } };
      const refsOf = (webhookId: string, ids: string[]) => ids.map((messageId) => ({ account, webhookId, messageId }));
      // One delivered first: an endpoint that answered fast before takes slots all the same.
      await deliverNow(refsOf(fastWebhook.id, await recordNotifications(account, fastWebhook.id, [event], NO_QUEUE)));
      const deadRefs = refsOf(deadWebhook.id, await recordNotifications(account, deadWebhook.id, Array.from({ length: 10 }, () => event), NO_QUEUE));
      const fastIds = await recordNotifications(account, fastWebhook.id, Array.from({ length: 5 }, () => event), NO_QUEUE);

      const putOff: QueuedDelivery[] = [];
      const before = Date.now();
      const deadBatch = deliverNow(deadRefs, { send: async (deliveries) => void putOff.push(...deliveries) });
      await dead.waitFor(2);
      const fastPutOff: QueuedDelivery[] = [];
      await deliverNow(refsOf(fastWebhook.id, fastIds), { send: async (deliveries) => void fastPutOff.push(...deliveries) });
      // The same address (another port): the same host's slots, all held by the dead receiver's attempts.
      expect(fastIds.filter((id) => requestsFor(id).length > 0)).toHaveLength(0);
      expect(fastPutOff).toHaveLength(5);
      // Another account's new endpoint has slots of its own.
      const other = await recordedMessage();
      await deliverNow(other);
      expect(requestsFor(other.messageId)).toHaveLength(1);
      // Both attempts still hang (2 s timeout): 2 slots of the account, the other 8 put off.
      expect(dead.requests).toHaveLength(2);
      expect(putOff).toHaveLength(8);
      for (const delivery of putOff) expect(delivery).toMatchObject({ account, webhookId: deadWebhook.id, deferrals: 1 });
      expect(Math.min(...putOff.map(({ at }) => at))).toBeGreaterThan(before);

      await deadBatch;
      const messages = await Promise.all(deadRefs.map((ref) => getMessage(ref)));
      expect(messages.filter((message) => message!.attempts === 1 && message!.attemptLog[0]!.error!.startsWith('timeout'))).toHaveLength(2);
      expect(messages.filter((message) => message!.status === 'pending' && message!.attempts === 0)).toHaveLength(8);
    } finally {
      await dead.close();
    }
  });
});
