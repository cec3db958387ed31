import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { BadRequest, Conflict, NotFound, webhookNotFound } from '../errors';
import { pageTokenKey } from '../config/page-token-key';
import { pageTokens } from '../page-token';
import type {
  Delivery,
  DeliveryDetail,
  DeliveryList,
  ListDeliveriesQuery,
  QueuedMessage,
  RecoverInput,
  RecoverResult,
} from '../schemas/deliveries';
import type { Webhook } from '../schemas/webhook';
import { countWebhookCall } from '../limits/call-rates';
import {
  getMessage,
  isStorableBody,
  putNewMessage,
  putNewMessageBodies,
  queryMessages,
  sharedPart,
  type BodyParts,
  type Message,
  type MessageState,
  type NewMessage,
  type SharedPart,
} from '../store/messages';
import { getEndpointHealth, originOf } from '../store/endpoint-health';
import { retentionEndOf } from '../store/table';
import { getWebhookItem } from '../store/webhooks';
import { uuidv7Time } from '../uuid';
import { forEachChunk } from '../store/batch';
import { describeEndpoint } from './admission';
import { queueAgainNow, type QueuedDelivery, type QueueSender } from './queue';
import { canonicalJson, envelopeAround } from './signing';
import { sweepGraceMs } from './sweep';

/** What a notification says: the hosted API's envelope holds it with the webhook's id, the event type and the message id. */
export interface Notification {
  eventType: string;
  event: unknown;
  /** Given by callers that derive it (the chain follower); a new UUIDv7 otherwise. */
  messageId?: string;
  /**
   * The event to record, given a test of whether an event fits with any envelope: `event`, or one
   * cut to fit (the chain follower: docs/chain-follower.md), which may answer once for every webhook
   * an event goes to. Without it, a notification too large to store is an error.
   */
  fitted?: (fits: (event: unknown) => boolean) => unknown;
  /** The backfill that records it, shown in the delivery log. */
  backfillId?: string;
}

const eventParts = new WeakMap<object, SharedPart>();


/**
 * The event's canonical text, gzipped at most once: once per event object, so that an event (or
 * cut) the chain follower shares between a thousand webhooks is serialised and compressed once, not
 * a thousand times. An event is never changed once given to be recorded.
 */
function eventPart(event: unknown): SharedPart {
  if (typeof event !== 'object' || event === null) return sharedPart(canonicalJson(event));
  let part = eventParts.get(event);
  if (!part) eventParts.set(event, (part = sharedPart(canonicalJson(event))));
  return part;
}

/**
 * Left under the store's limits by a fitted event: envelopes differ only in their ids, of fixed
 * length, so that an event that fits in one fits in any, whatever gzip makes of the ids.
 */
const ENVELOPE_SPARE_BYTES = 1024;
/**
 * Messages recorded a run at a time (a full block may give hundreds, of one webhook or of many): a
 * batch write of the run's bodies, then their states, then one queue send for the run.
 */
const RECORDING_RUN = 25;
const RUNS_RECORDED_IN_PARALLEL = 3;

/** One webhook's notifications to record. */
export interface WebhookNotifications {
  account: string;
  webhookId: string;
  notifications: Notification[];
  /** Its endpoint (the URL's origin), for the queue: the consumer reads its health with the message. */
  origin?: string;
}

/** Per webhook: the ids of its notifications, all recorded (now or before), or the first error of one that was not. */
export type WebhookRecording = { ids: string[] } | { error: unknown };

/**
 * Records notifications for a webhook, each durably and before anything is sent, then queues them.
 * A notification recorded before (the same message id) is neither recorded nor queued again; one
 * too large to store is recorded as its `fitted` event, else it is an error (NotificationTooLarge).
 * One that cannot be recorded does not keep the others from being recorded and queued (`inOrder`:
 * those after it), and the first such error is then thrown. Returns the recorded message ids.
 */
export async function recordNotifications(
  account: string,
  webhookId: string,
  notifications: Notification[],
  queue: QueueSender,
  origin?: string,
  /** None after one that fails: a backfill's, block after block. */
  inOrder = false,
): Promise<string[]> {
  const [recording] = await recordWebhooksNotifications([{ account, webhookId, notifications, origin }], queue, { inOrder });
  if ('error' in recording!) throw recording.error;
  return recording!.ids;
}

/**
 * recordNotifications for many webhooks at once (a block's): their notifications recorded a run at
 * a time across webhooks, each run queued as soon as it is recorded, so that the first are delivered
 * while the last are recorded. One webhook's failure is its own: the others' are recorded and queued.
 */
export async function recordWebhooksNotifications(webhooks: WebhookNotifications[], queue: QueueSender, { inOrder = false } = {}): Promise<WebhookRecording[]> {
  const now = Date.now();
  const ids = webhooks.map(({ notifications }) => notifications.map(({ messageId }) => messageId ?? uuidv7()));
  const errors: unknown[] = webhooks.map(() => undefined);
  const failed = (webhook: number, error: unknown) => void (errors[webhook] ??= error);
  const entries = webhooks.flatMap(({ notifications }, webhook) => notifications.map((notification, index) => ({ webhook, notification, messageId: ids[webhook]![index]! })));
  const recordRun = async (run: typeof entries) => {
    const made = run.flatMap(({ webhook, notification, messageId }) => {
      const { account, webhookId } = webhooks[webhook]!;
      try {
        return [{ webhook, message: newMessage(account, webhookId, messageId, notification, now) }];
      } catch (error) {
        failed(webhook, error);
        return [];
      }
    });
    // One alone (a test notification, a block with one match): its body put under a condition, no batch.
    let bodies: (boolean | Error)[] | undefined;
    try {
      if (made.length > 1) bodies = await putNewMessageBodies(made.map(({ message }) => message));
    } catch (error) {
      for (const { webhook } of made) failed(webhook, error);
      return;
    }
    const recorded: QueuedDelivery[] = [];
    const putState = async (position: number) => {
      const { webhook, message } = made[position]!;
      const body = bodies?.[position];
      try {
        if (body instanceof Error) throw body;
        if (body === false || !(await putNewMessage(message, { bodyStored: body === true }))) return;
        recorded.push({ account: message.account, webhookId: message.webhookId, messageId: message.messageId, at: now, origin: webhooks[webhook]!.origin });
      } catch (error) {
        failed(webhook, error);
      }
    };
    if (inOrder) {
      for (let position = 0; position < made.length && errors.every((error) => error === undefined); position += 1) await putState(position);
    } else {
      await Promise.all([...made.keys()].map(putState));
    }
    await queue.send(recorded);
  };
  if (inOrder) {
    for (let start = 0; start < entries.length && errors.every((error) => error === undefined); start += RECORDING_RUN) await recordRun(entries.slice(start, start + RECORDING_RUN));
  } else {
    await forEachChunk(entries, RECORDING_RUN, RUNS_RECORDED_IN_PARALLEL, recordRun);
  }
  return webhooks.map((_, webhook) => (errors[webhook] === undefined ? { ids: ids[webhook]! } : { error: errors[webhook] }));
}

function newMessage(account: string, webhookId: string, messageId: string, { eventType, event, fitted, backfillId }: Notification, now: number): NewMessage {
  const { before, after } = envelopeAround({ webhookId, eventType, messageId });
  const bodyOf = (content: unknown): BodyParts => [before, eventPart(content), after];
  const content = fitted ? fitted((candidate) => isStorableBody(bodyOf(candidate), ENVELOPE_SPARE_BYTES)) : event;
  return {
    account,
    webhookId,
    messageId,
    eventType,
    createdAt: uuidv7Time(messageId),
    event: eventPart(content),
    status: 'pending',
    attempts: 0,
    scheduledAttempts: 0,
    nextAttemptAt: now,
    sweepAt: now + sweepGraceMs(),
    attemptLog: [],
    ...(backfillId ? { backfillId } : {}),
    ...transactionOf(event),
  };
}

/** The transaction an event is about, for the delivery log; nothing for an event without its hash and block number. */
function transactionOf(event: unknown): Pick<NewMessage, 'transactionHash' | 'blockNumber'> {
  const transaction = (event as { transaction?: { txHash?: unknown; blockNumber?: unknown } } | null | undefined)?.transaction;
  const txHash = transaction?.txHash;
  const blockNumber = transaction?.blockNumber;
  return typeof txHash === 'string' && typeof blockNumber === 'string' ? { transactionHash: txHash, blockNumber } : {};
}

async function activeWebhook(account: string, id: string, action: string): Promise<Webhook> {
  const webhook = await getWebhookItem(account, id);
  if (!webhook) throw webhookNotFound(id);
  return refuseInactive(webhook, action);
}

function refuseInactive(webhook: Webhook, action: string): Webhook {
  if (webhook.status !== 'active') throw new BadRequest(`Webhook ${webhook.id} is inactive: activate it (PATCH {"status":"active"}) to ${action}`);
  return webhook;
}

/**
 * A well-formed `address_activity` notification about the webhook's first address, sent like any
 * other (signed, retried, logged). It is told apart by its block: number "0", hash all zeros.
 */
export async function sendTestNotification(account: string, id: string, queue: QueueSender): Promise<QueuedMessage> {
  const webhook = await activeWebhook(account, id, 'send it a test notification');
  await countWebhookCall(account, id, 'testNotification');
  const [messageId] = await recordNotifications(account, id, [{ eventType: webhook.eventType, event: testEvent(webhook) }], queue, originOf(webhook.url));
  return { messageId: messageId! };
}

const ZERO_HASH = `0x${'0'.repeat(64)}`;

function testEvent(webhook: Webhook) {
  const address = webhook.metadata.addresses[0] ?? `0x${'0'.repeat(40)}`;
  const txHash = `0x${randomBytes(32).toString('hex')}`;
  const transaction = {
    blockHash: ZERO_HASH,
    blockNumber: '0',
    blockTimestamp: Math.floor(Date.now() / 1000),
    transactionIndex: 0,
    txHash,
    txStatus: '1',
    from: address,
    to: address,
    value: '0',
    input: '0x',
    nonce: '0',
    type: 2,
    gas: '21000',
    gasPrice: '25000000000',
    maxFeePerGas: '25000000000',
    maxPriorityFeePerGas: '1000000000',
    chainId: webhook.chainId,
    receiptCumulativeGasUsed: '21000',
    receiptGasUsed: '21000',
    receiptEffectiveGasPrice: '25000000000',
    receiptRoot: ZERO_HASH,
    erc20Transfers: [],
    erc721Transfers: [],
    erc1155Transfers: [],
    ...(webhook.includeInternalTxs ? { internalTransactions: [] } : {}),
  };
  return webhook.includeLogs ? { transaction, logs: [] } : { transaction };
}

function toDelivery(message: MessageState): Delivery {
  const last = message.attemptLog.at(-1);
  return {
    messageId: message.messageId,
    eventType: message.eventType,
    createdAt: message.createdAt,
    status: message.status,
    attempts: message.attempts,
    nextAttemptAt: message.status === 'pending' ? message.nextAttemptAt : undefined,
    waitingForActivation: message.status === 'pending' && message.waitingForActivation ? true : undefined,
    attemptUnderWay: message.status === 'pending' && (message.claimedUntil ?? 0) > Date.now() ? true : undefined,
    lastAttemptAt: last?.attemptedAt,
    lastResponseStatusCode: last?.statusCode,
    lastDurationMs: last?.durationMs,
    lastError: last?.error,
    backfillId: message.backfillId,
    transactionHash: message.transactionHash,
    blockNumber: message.blockNumber,
  };
}

/** One page of the webhook's delivery log, newest first; reads one message beyond the page to know whether another follows. */
export async function listDeliveries(account: string, id: string, { pageSize, pageToken, status }: ListDeliveriesQuery): Promise<DeliveryList> {
  const key = await pageTokenKey();
  const afterId = pageToken === undefined ? undefined : pageTokens.deliveries.decode(key, { account, webhookId: id, status }, pageToken);
  const webhook = await getWebhookItem(account, id);
  if (!webhook) throw webhookNotFound(id);
  const health = await getEndpointHealth({ account, origin: originOf(webhook.url) });
  const { messages, lookedUpTo } = await queryMessages({ account, webhookId: id, status, limit: pageSize + 1, afterId });
  const page = messages.slice(0, pageSize).map(toDelivery);
  const endpoint = describeEndpoint(health);
  // Pending and delivered ones are looked for past the others, a bounded number a call: a page may end short, with a token.
  const nextAfter = messages.length > pageSize ? page.at(-1)!.messageId : lookedUpTo;
  if (nextAfter === undefined) return { deliveries: page, endpoint };
  return { deliveries: page, endpoint, nextPageToken: pageTokens.deliveries.encode(key, { account, webhookId: id, status }, nextAfter) };
}

const messageNotFound = (id: string, messageId: string) => new NotFound(`No message ${messageId} for webhook ${id}`);

/**
 * The message, read with its webhook: a message of a webhook deleted for good is not found either.
 * With `action`, the webhook must be active to do it.
 */
async function existingMessage(account: string, id: string, messageId: string, action?: string): Promise<Message> {
  const [webhook, message] = await Promise.all([getWebhookItem(account, id), getMessage({ account, webhookId: id, messageId })]);
  if (!webhook) throw webhookNotFound(id);
  if (action) refuseInactive(webhook, action);
  if (!message) throw messageNotFound(id, messageId);
  return message;
}

export async function getDelivery(account: string, id: string, messageId: string): Promise<DeliveryDetail> {
  const message = await existingMessage(account, id, messageId);
  return { ...toDelivery(message), body: message.body, attemptHistory: message.attemptLog };
}

/**
 * Sends the message again now, with the same id, whatever its status. A pending message's next
 * attempt is brought forward (it stays on its schedule); a finished one gets one manual attempt,
 * whose outcome is its new status. While an attempt of it is under way, a 409: its outcome would
 * overwrite the retry's. Counted in the webhook's and the account's minute (a 429 past either), as
 * test notifications and recover calls are: each sends at once.
 */
export async function retryDelivery(account: string, id: string, messageId: string, queue: QueueSender): Promise<QueuedMessage> {
  const message = await existingMessage(account, id, messageId, 'send it messages');
  await countWebhookCall(account, id, 'retry');
  if ((await requeue([message], queue)).length === 0) {
    throw new Conflict(`An attempt of message ${messageId} is under way: retry it once its outcome shows in the log`);
  }
  return { messageId };
}

/** A retry or recover: a manual attempt of a finished message, the next one of a pending one; either unless its status changed. */
const requeue = (messages: MessageState[], queue: QueueSender) =>
  queueAgainNow(messages, (message) => ({ manual: message.status !== 'pending', seenStatus: message.status }), queue);

/** How many failed messages one recover call queues again; a second call takes up the rest. */
export const RECOVER_LIMIT = 1000;

/** Queues every failed message of the webhook created since `since` again (at most RECOVER_LIMIT a call), each for one manual attempt. */
export async function recoverFailedDeliveries(account: string, id: string, { since }: RecoverInput, queue: QueueSender): Promise<RecoverResult> {
  await activeWebhook(account, id, 'recover its messages');
  await countWebhookCall(account, id, 'recover');
  const { messages: failed } = await queryMessages({ account, webhookId: id, status: 'failed', limit: RECOVER_LIMIT, fromId: idPrefixAt(since) });
  // Not one whose retention has ended: its body may be gone already.
  const now = Date.now();
  const requeued = await requeue(failed.filter((message) => message.createdAt >= since && retentionEndOf(message.createdAt) * 1000 > now), queue);
  return { messages: requeued.length };
}

/** The smallest message id created at `ms`: ids begin with their creation time (48 bits, hex). */
function idPrefixAt(ms: number): string {
  const hex = Math.min(ms, 2 ** 48 - 1).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}`;
}
