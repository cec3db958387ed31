import { gunzipSync, gzipSync } from 'node:zlib';
import { tableName } from './client';
import { conditionHeld } from './conditional-write';
import { deleteItem, getItem, putItem, queryItems, updateItem, type Item } from './items';
import {
  GSI1,
  GSI3,
  MESSAGE_SORT_KEY_PREFIX,
  messageDueIndexKey,
  messageExpiryIndexKey,
  messageKey,
  messageRefOfKey,
  messageStatusIndexKey,
  timeKeyBound,
  TABLE_KEYS,
  type TableKey,
} from './table';

export type MessageStatus = 'pending' | 'succeeded' | 'failed';

/** Which message: what the queue carries and the sweep finds. */
export interface MessageRef {
  account: string;
  webhookId: string;
  messageId: string;
}

export interface Attempt {
  /** Milliseconds since the epoch. */
  attemptedAt: number;
  /** `scheduled`: the first attempt or one of the retry schedule's; `manual`: asked for by a retry or a recover. */
  trigger: 'scheduled' | 'manual';
  statusCode?: number;
  error?: string;
  durationMs: number;
  /** The first 4 KB of the response's body. */
  responseBody?: string;
}

/** A notification as recorded: what was sent and what happened to it. */
export interface Message extends MessageRef {
  eventType: string;
  createdAt: number;
  /** The exact bytes sent and signed (canonical JSON). */
  body: string;
  status: MessageStatus;
  /** Every attempt made, manual ones included. */
  attempts: number;
  /** The attempts of the retry schedule made so far. */
  scheduledAttempts: number;
  /** When pending: when the next attempt is due. Changes with every scheduling change: claims are conditioned on it. */
  nextAttemptAt?: number;
  /**
   * When pending: when the sweep of the due-time index takes the message up if no queue message has
   * brought it to an attempt (its key in gsi3).
   */
  sweepAt?: number;
  /** While an attempt is under way: when its claim ends. */
  claimedUntil?: number;
  /** The next attempt is a manual one (its failure does not schedule another). */
  manual?: boolean;
  /** Set while the webhook is inactive: the message waits for it to be activated. */
  waitingForActivation?: boolean;
  /** The attempts, oldest first; the last ATTEMPTS_KEPT of them. */
  attemptLog: Attempt[];
  /**
   * Once finished: when it is deleted (Unix seconds, its creation plus the retention), DynamoDB's TTL
   * attribute. A pending message has none: one waiting for its webhook to be activated is kept.
   */
  expiresAt?: number;
}

/**
 * The attempts a message keeps in its log: the whole schedule and some manual ones. With at most
 * 4 KB of response body each, and a stored body of at most MAX_STORED_BODY_BYTES, an item stays
 * under DynamoDB's 400 KB.
 */
export const ATTEMPTS_KEPT = 25;
/** The largest notification body: receivers get it whole. */
export const MAX_BODY_BYTES = 5 * 1024 * 1024;
/** What an item holds of a body at most: a larger body is stored gzipped, and must fit in this compressed. */
export const MAX_STORED_BODY_BYTES = 256 * 1024;
/** Bodies above this are stored gzipped: smaller items, cheaper writes and reads. */
const COMPRESS_ABOVE_BYTES = 16 * 1024;

/** A notification too large to record: over MAX_BODY_BYTES, or over MAX_STORED_BODY_BYTES gzipped. */
export class NotificationTooLarge extends Error {
  constructor(
    readonly bytes: number,
    readonly storedBytes: number,
  ) {
    super(`notification of ${bytes} bytes (${storedBytes} stored) is over the limits of ${MAX_BODY_BYTES} bytes (${MAX_STORED_BODY_BYTES} stored)`);
    this.name = 'NotificationTooLarge';
  }
}

/** A part of many bodies (the chain follower's event shared by many webhooks): measured and gzipped once. */
export interface SharedPart {
  readonly text: string;
  readonly bytes: number;
  gzip(): Buffer;
}

export function sharedPart(text: string): SharedPart {
  let gzip: Buffer | undefined;
  return { text, bytes: Buffer.byteLength(text), gzip: () => (gzip ??= gzipSync(text)) };
}

/**
 * A body as the parts it is the concatenation of. Gzipped part by part: gunzip reads concatenated
 * gzip members as one, so that a shared part is compressed once for all the bodies holding it.
 */
export type BodyParts = Array<string | SharedPart>;

/** A message to record: its body given whole or in parts. */
export type NewMessage = Omit<Message, 'body'> & { body: string | BodyParts };

const partsOf = (body: string | BodyParts): BodyParts => (typeof body === 'string' ? [body] : body);
const bytesOf = (parts: BodyParts) => parts.reduce((sum, part) => sum + (typeof part === 'string' ? Buffer.byteLength(part) : part.bytes), 0);
const gzipOf = (parts: BodyParts) => Buffer.concat(parts.map((part) => (typeof part === 'string' ? gzipSync(part) : part.gzip())));
const textOf = (parts: BodyParts) => parts.map((part) => (typeof part === 'string' ? part : part.text)).join('');

/** The item attribute holding a body: `body` as is, or `bodyGzip` once large. */
function storedBody(body: string | BodyParts): { body: string } | { bodyGzip: Uint8Array } {
  const parts = partsOf(body);
  const bytes = bytesOf(parts);
  if (bytes > MAX_BODY_BYTES) throw new NotificationTooLarge(bytes, bytes);
  if (bytes <= COMPRESS_ABOVE_BYTES) return { body: textOf(parts) };
  const bodyGzip = gzipOf(parts);
  if (bodyGzip.byteLength > MAX_STORED_BODY_BYTES) throw new NotificationTooLarge(bytes, bodyGzip.byteLength);
  return { bodyGzip };
}

/** What gzip adds at most to a body that does not compress: its header, and 5 bytes a 64 KB block. */
const GZIP_OVERHEAD_BYTES = 1024;

/**
 * Whether `putNewMessage` can store the body with `spareBytes` left under each limit. It is gzipped
 * (as it would be stored) only when its size does not tell: over MAX_BODY_BYTES it never fits, and
 * up to MAX_STORED_BODY_BYTES it always does.
 */
export function isStorableBody(body: string | BodyParts, spareBytes = 0): boolean {
  const parts = partsOf(body);
  const bytes = bytesOf(parts) + spareBytes;
  if (bytes > MAX_BODY_BYTES) return false;
  if (bytes + GZIP_OVERHEAD_BYTES * parts.length <= MAX_STORED_BODY_BYTES) return true;
  return gzipOf(parts).byteLength + spareBytes <= MAX_STORED_BODY_BYTES;
}

const MESSAGE_FIELDS = [
  'account', 'webhookId', 'messageId', 'eventType', 'createdAt', 'body', 'status', 'attempts', 'scheduledAttempts',
  'nextAttemptAt', 'sweepAt', 'claimedUntil', 'manual', 'waitingForActivation', 'attemptLog', 'expiresAt',
] as const;

export function toMessage(item: Item): Message {
  const message = {} as Record<string, unknown>;
  for (const field of MESSAGE_FIELDS) if (item[field] !== undefined) message[field] = item[field];
  if (item.bodyGzip instanceof Uint8Array) message.body = gunzipSync(item.bodyGzip).toString('utf8');
  return message as unknown as Message;
}

const keyOf = ({ account, webhookId, messageId }: MessageRef) => messageKey(account, webhookId, messageId);

/** No attempt holds the message at `:now`. */
const UNCLAIMED = '(attribute_not_exists(claimedUntil) OR claimedUntil <= :now)';

/**
 * Records a new pending message, due now and swept up at `message.sweepAt`. False when it was
 * already recorded (the same id); NotificationTooLarge when its body cannot be stored.
 */
export async function putNewMessage({ body, ...message }: NewMessage): Promise<boolean> {
  return conditionHeld(
    putItem({
      TableName: tableName(),
      Item: {
        ...keyOf(message),
        ...messageStatusIndexKey(message.account, message.webhookId, message.status, message.messageId),
        ...messageDueIndexKey(message.messageId, message.sweepAt!),
        ...message,
        ...storedBody(body),
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

export async function getMessage(ref: MessageRef): Promise<Message | undefined> {
  const item = await getItem({ TableName: tableName(), Key: keyOf(ref), ConsistentRead: true });
  return item && toMessage(item);
}

/**
 * Takes the message for one attempt until `until` (after the attempt's timeout): the sweep takes it
 * up again only then, so that a process that dies during the attempt leaves it to another, and no
 * second queue message starts an attempt meanwhile. Holds only if the message is still pending for
 * the attempt the caller read (its `nextAttemptAt`), and no other attempt holds it. A message read
 * with a sweep time (`seenSweepAt`) at or after `until`, as most are, keeps it: its entry in the
 * due-time index, whose shards bound the stage's rate, is not written (docs/delivery-scale.md).
 */
export async function claimMessage(ref: MessageRef, seenNextAttemptAt: number, now: number, until: number, seenSweepAt?: number): Promise<boolean> {
  const values: Item = { ':until': until, ':pending': 'pending', ':seen': seenNextAttemptAt, ':now': now };
  let update = 'SET claimedUntil = :until';
  let condition = `#status = :pending AND nextAttemptAt = :seen AND ${UNCLAIMED}`;
  if (seenSweepAt !== undefined && seenSweepAt >= until) {
    condition += ' AND sweepAt >= :until';
  } else {
    update += ', sweepAt = :until, gsi3sk = :dueKey';
    values[':dueKey'] = messageDueIndexKey(ref.messageId, until).gsi3sk;
  }
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: keyOf(ref),
      UpdateExpression: update,
      ConditionExpression: condition,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: values,
    }),
  );
}

export type AttemptResult =
  | { status: 'succeeded' | 'failed'; expiresAt: number }
  | { status: 'pending'; nextAttemptAt: number; sweepAt: number };

/**
 * Records an attempt made under the claim that ends at `claimedUntil`, and what follows from it: the message
 * succeeded, failed, or waits for its next attempt. False when the claim was lost (a retry asked for
 * meanwhile): then the attempt is only added to the log.
 */
export async function recordAttempt(
  message: Message,
  claimedUntil: number,
  attempt: Attempt,
  result: AttemptResult,
): Promise<boolean> {
  const attemptLog = [...message.attemptLog, attempt].slice(-ATTEMPTS_KEPT);
  const scheduledAttempts = message.scheduledAttempts + (attempt.trigger === 'scheduled' ? 1 : 0);
  const index =
    result.status === 'pending'
      ? messageDueIndexKey(message.messageId, result.sweepAt)
      : messageExpiryIndexKey(message.messageId, result.expiresAt * 1000);
  const values: Item = {
    ':status': result.status,
    ':gsi1pk': messageStatusIndexKey(message.account, message.webhookId, result.status, message.messageId).gsi1pk,
    ':gsi3pk': index.gsi3pk,
    ':gsi3sk': index.gsi3sk,
    ':attempts': message.attempts + 1,
    ':scheduled': scheduledAttempts,
    ':log': attemptLog,
    ':claimed': claimedUntil,
  };
  let update = 'SET #status = :status, gsi1pk = :gsi1pk, gsi3pk = :gsi3pk, gsi3sk = :gsi3sk, attempts = :attempts, scheduledAttempts = :scheduled, attemptLog = :log';
  if (result.status === 'pending') {
    update += ', nextAttemptAt = :next, sweepAt = :sweepAt REMOVE manual, claimedUntil, waitingForActivation';
    values[':next'] = result.nextAttemptAt;
    values[':sweepAt'] = result.sweepAt;
  } else {
    update += ', expiresAt = :expiresAt REMOVE nextAttemptAt, sweepAt, manual, claimedUntil, waitingForActivation';
    values[':expiresAt'] = result.expiresAt;
  }
  const recorded = await conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: keyOf(message),
      UpdateExpression: update,
      ConditionExpression: 'claimedUntil = :claimed',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: values,
    }),
  );
  if (!recorded) await addToAttemptLog(message, attempt);
  return recorded;
}

/** An attempt whose claim was lost: logged, and counted, without changing what the message waits for. */
async function addToAttemptLog(message: Message, attempt: Attempt): Promise<void> {
  await conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: keyOf(message),
      UpdateExpression: 'SET attemptLog = :log, attempts = attempts + :one',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':log': [...message.attemptLog, attempt].slice(-ATTEMPTS_KEPT), ':one': 1 },
    }),
  );
}

/**
 * Schedules the message's next attempt: at `at`, swept up at `sweepAt`. `manual`: a retry asked for
 * (of a message in any status); otherwise the message waits for its webhook (it is pending and
 * stays so). Holds only while no attempt holds the message at `now`, and, when given, if it still
 * is as the caller read it: its `nextAttemptAt` or its status.
 */
export interface RescheduleOptions {
  at: number;
  sweepAt: number;
  now: number;
  manual: boolean;
  waitingForActivation?: boolean;
  seenNextAttemptAt?: number;
  seenStatus?: MessageStatus;
}

export async function rescheduleMessage(ref: MessageRef, options: RescheduleOptions): Promise<boolean> {
  const due = messageDueIndexKey(ref.messageId, options.sweepAt);
  const values: Item = {
    ':pending': 'pending',
    ':gsi1pk': messageStatusIndexKey(ref.account, ref.webhookId, 'pending', ref.messageId).gsi1pk,
    ':gsi3pk': due.gsi3pk,
    ':gsi3sk': due.gsi3sk,
    ':at': options.at,
    ':sweepAt': options.sweepAt,
    ':now': options.now,
  };
  let update = 'SET #status = :pending, gsi1pk = :gsi1pk, gsi3pk = :gsi3pk, gsi3sk = :gsi3sk, nextAttemptAt = :at, sweepAt = :sweepAt';
  if (options.manual) update += ', manual = :true';
  if (options.waitingForActivation) update += ', waitingForActivation = :true';
  if (options.manual || options.waitingForActivation) values[':true'] = true;
  update += options.waitingForActivation ? ' REMOVE claimedUntil, expiresAt' : ' REMOVE claimedUntil, expiresAt, waitingForActivation';
  let condition = `attribute_exists(pk) AND ${UNCLAIMED}`;
  if (options.seenNextAttemptAt !== undefined) {
    condition += ' AND nextAttemptAt = :seen';
    values[':seen'] = options.seenNextAttemptAt;
  }
  if (options.seenStatus !== undefined) {
    condition += ' AND #status = :seenStatus';
    values[':seenStatus'] = options.seenStatus;
  }
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: keyOf(ref),
      UpdateExpression: update,
      ConditionExpression: condition,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: values,
    }),
  );
}

/**
 * Parks a pending message whose webhook is inactive: out of the due-time index, so that it costs
 * nothing while it waits, until the webhook's activation queues it again (`resumeWebhookMessages`).
 * Conditioned like a claim: no attempt holds it and it is as the caller read it.
 */
export async function parkMessage(ref: MessageRef, seenNextAttemptAt: number, now: number): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: keyOf(ref),
      UpdateExpression: 'SET waitingForActivation = :true REMOVE gsi3pk, gsi3sk, sweepAt, claimedUntil',
      ConditionExpression: `#status = :pending AND nextAttemptAt = :seen AND ${UNCLAIMED}`,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':true': true, ':pending': 'pending', ':seen': seenNextAttemptAt, ':now': now },
    }),
  );
}

/** A page of the webhook's parked messages (pending, waiting for activation), from gsi1, after `startKey`. */
export async function queryParkedMessages(account: string, webhookId: string, startKey?: Item): Promise<{ messages: Message[]; lastEvaluatedKey?: Item }> {
  const page = await queryItems({
    TableName: tableName(),
    IndexName: GSI1.indexName,
    KeyConditionExpression: `${GSI1.partitionKey} = :pk`,
    FilterExpression: 'waitingForActivation = :true',
    ExpressionAttributeValues: { ':pk': messageStatusIndexKey(account, webhookId, 'pending', '').gsi1pk, ':true': true },
    Limit: 500,
    ExclusiveStartKey: startKey,
  });
  return { messages: page.items.map(toMessage), lastEvaluatedKey: page.lastEvaluatedKey };
}

/** Deletes a pending message nobody may be sent any more (its webhook is gone), unless an attempt holds it or it changed since read. */
export async function deleteUnsendableMessage(ref: MessageRef, seenNextAttemptAt: number, now: number): Promise<boolean> {
  return conditionHeld(
    deleteItem({
      TableName: tableName(),
      Key: keyOf(ref),
      ConditionExpression: `nextAttemptAt = :seen AND ${UNCLAIMED}`,
      ExpressionAttributeValues: { ':seen': seenNextAttemptAt, ':now': now },
    }),
  );
}

export interface MessagePageQuery {
  account: string;
  webhookId: string;
  status?: MessageStatus;
  limit: number;
  /** The last message already returned; the page starts just after it. */
  afterId?: string;
  /** Only messages whose id (creation time) is at least this one's. */
  fromId?: string;
}

/** Up to `limit` messages of the webhook, newest first. */
export async function queryMessages({ account, webhookId, status, limit, afterId, fromId }: MessagePageQuery): Promise<Message[]> {
  const source = status
    ? { keys: GSI1, indexName: GSI1.indexName, consistentRead: undefined, partition: messageStatusIndexKey(account, webhookId, status, '').gsi1pk }
    : { keys: TABLE_KEYS, indexName: undefined, consistentRead: true, partition: messageKey(account, webhookId, '').pk };
  let startKey: Item | undefined;
  if (afterId !== undefined) {
    startKey = messageKey(account, webhookId, afterId);
    if (status) Object.assign(startKey, messageStatusIndexKey(account, webhookId, status, afterId));
  }
  const range = fromId === undefined ? `begins_with(${source.keys.sortKey}, :prefix)` : `${source.keys.sortKey} BETWEEN :from AND :to`;
  const values: Item = { ':pk': source.partition };
  if (fromId === undefined) values[':prefix'] = MESSAGE_SORT_KEY_PREFIX;
  else Object.assign(values, { ':from': `${MESSAGE_SORT_KEY_PREFIX}${fromId}`, ':to': `${MESSAGE_SORT_KEY_PREFIX}~` });
  const messages: Message[] = [];
  do {
    const page = await queryItems({
      TableName: tableName(),
      IndexName: source.indexName,
      ConsistentRead: source.consistentRead,
      KeyConditionExpression: `${source.keys.partitionKey} = :pk AND ${range}`,
      ExpressionAttributeValues: values,
      ScanIndexForward: false,
      Limit: limit - messages.length,
      ExclusiveStartKey: startKey,
    });
    for (const item of page.items) messages.push(toMessage(item));
    startKey = page.lastEvaluatedKey;
  } while (startKey && messages.length < limit);
  return messages;
}

/**
 * Moves a pending message's sweep time on, unless it changed since the sweep read it: a sweep that
 * queues a message does not queue it again at its next pass.
 */
export async function postponeSweep(ref: MessageRef, seenSweepAt: number, sweepAt: number): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: keyOf(ref),
      UpdateExpression: 'SET sweepAt = :sweepAt, gsi3sk = :dueKey',
      ConditionExpression: '#status = :pending AND sweepAt = :seen',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':sweepAt': sweepAt,
        ':dueKey': messageDueIndexKey(ref.messageId, sweepAt).gsi3sk,
        ':pending': 'pending',
        ':seen': seenSweepAt,
      },
    }),
  );
}

/** Messages of one gsi3 partition whose time has come: due ones under `DUE#`, expired ones under `EXPIRES#`. */
export async function queryTimeIndex(partition: string, now: number, limit: number): Promise<Array<MessageRef & { at: number }>> {
  const page = await queryItems({
    TableName: tableName(),
    IndexName: GSI3.indexName,
    KeyConditionExpression: `${GSI3.partitionKey} = :pk AND ${GSI3.sortKey} <= :now`,
    ExpressionAttributeValues: { ':pk': partition, ':now': timeKeyBound(now) },
    Limit: limit,
  });
  return page.items.map((item) => ({ ...messageRefOfKey(item as TableKey), at: Number(String(item.gsi3sk).split('#')[0]) }));
}

/** Deletes a message if it is still finished and expired (a retry may have brought it back). */
export async function deleteExpiredMessage(ref: MessageRef, now: number): Promise<boolean> {
  return conditionHeld(
    deleteItem({
      TableName: tableName(),
      Key: keyOf(ref),
      ConditionExpression: '#status <> :pending AND expiresAt <= :now',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':pending': 'pending', ':now': Math.floor(now / 1000) },
    }),
  );
}
