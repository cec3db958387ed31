import { deflateRawSync, gunzipSync, inflateRawSync } from 'node:zlib';
import { runtimeConfig } from '../config/runtime';
import { envelopeAround } from '../deliveries/signing';
import { tableName } from './client';
import { conditionHeld, unlessConditionFails } from './conditional-write';
import { keyText, readItems, writeItems } from './batch';
import { DeleteItemCommand, PutItemCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { moveOnce } from './layout-moves';
import { deleteItem, getItem, pageReader, putItem, queryItems, updateItem, type Item, type QueryPage } from './items';
import {
  GSI2,
  GSI3,
  duePartitions,
  expiryPartitions,
  isUnspreadMessagePartition,
  MESSAGE_BODY_SORT_KEY_PREFIX,
  MESSAGE_SORT_KEY_PREFIX,
  messageBodyKey,
  messageIdOfSortKey,
  messagePartitionsMarkKey,
  messageDueIndexKey,
  messageExpiryIndexKey,
  messageKey,
  messagePartitions,
  messageRefOfKey,
  messageSortKey,
  messageStatusIndexMarkKey,
  messageStatusPartition,
  retentionEndOf,
  spreadMessagePartition,
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

/** A notification as recorded, without its body: what happened to it (the message's state item). */
export interface MessageState extends MessageRef {
  eventType: string;
  createdAt: number;
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
  /** The backfill that recorded it, if one did. */
  backfillId?: string;
  /** The transaction its event is about, and that transaction's block number (a decimal string, "0" for a test notification). */
  transactionHash?: string;
  blockNumber?: string;
  /** Parked once: its body was kept past the retention, until it finishes. */
  bodyKept?: boolean;
  /** The attempts, oldest first; the last ATTEMPTS_KEPT of them. */
  attemptLog: Attempt[];
  /**
   * Once finished: when it is deleted (Unix seconds, its creation plus the retention), DynamoDB's TTL
   * attribute. A pending message has none: one waiting for its webhook to be activated is kept.
   */
  expiresAt?: number;
}

/** A notification as recorded: what was sent and what happened to it. */
export interface Message extends MessageState {
  /** The exact bytes sent and signed (canonical JSON). */
  body: string;
}

/**
 * The attempts a message keeps in its log: the whole schedule and some manual ones. With at most
 * 4 KB of response body each, a state item stays well under DynamoDB's 400 KB.
 */
export const ATTEMPTS_KEPT = 25;
/** The largest notification body: receivers get it whole. */
export const MAX_NOTIFICATION_BYTES = 5 * 1024 * 1024;
/** What a body item holds at most: the event, compressed, must fit in this. */
export const MAX_STORED_BODY_BYTES = 256 * 1024;

/** A notification too large to record: over MAX_NOTIFICATION_BYTES, or its event over MAX_STORED_BODY_BYTES compressed. */
export class NotificationTooLarge extends Error {
  constructor(
    readonly bytes: number,
    readonly storedBytes: number,
  ) {
    super(`notification of ${bytes} bytes (${storedBytes} stored) is over the limits of ${MAX_NOTIFICATION_BYTES} bytes (${MAX_STORED_BODY_BYTES} stored)`);
    this.name = 'NotificationTooLarge';
  }
}

/** A message's event (shared by many bodies when the chain follower sends it to many webhooks): measured and compressed once. */
export interface SharedPart {
  readonly text: string;
  readonly bytes: number;
  compressed(): Buffer;
}

/** Raw deflate: gzip's header and trailer would be 18 bytes of every body item. */
const compress = (text: string) => deflateRawSync(text);

export function sharedPart(text: string): SharedPart {
  let compressed: Buffer | undefined;
  return { text, bytes: Buffer.byteLength(text), compressed: () => (compressed ??= compress(text)) };
}

/** A body as the parts it is the concatenation of: the envelope's and the event's. */
export type BodyParts = Array<string | SharedPart>;

/** A message to record: its state, and its event, which the envelope of its ids goes around. */
export type NewMessage = MessageState & { event: SharedPart };

const partsOf = (body: string | BodyParts): BodyParts => (typeof body === 'string' ? [body] : body);
const bytesOf = (parts: BodyParts) => parts.reduce((sum, part) => sum + (typeof part === 'string' ? Buffer.byteLength(part) : part.bytes), 0);
const compressedBytesOf = (parts: BodyParts) => parts.reduce((sum, part) => sum + (typeof part === 'string' ? compress(part) : part.compressed()).byteLength, 0);

/** What deflate adds at most to a body that does not compress: 5 bytes a 64 KB block, and some. */
const DEFLATE_OVERHEAD_BYTES = 1024;

/**
 * Whether `putNewMessage` can store the body with `spareBytes` left under each limit. It is
 * compressed (as its event would be stored) only when its size does not tell: over MAX_NOTIFICATION_BYTES it
 * never fits, and up to MAX_STORED_BODY_BYTES it always does.
 */
export function isStorableBody(body: string | BodyParts, spareBytes = 0): boolean {
  const parts = partsOf(body);
  const bytes = bytesOf(parts) + spareBytes;
  if (bytes > MAX_NOTIFICATION_BYTES) return false;
  if (bytes + DEFLATE_OVERHEAD_BYTES * parts.length <= MAX_STORED_BODY_BYTES) return true;
  return compressedBytesOf(parts) + spareBytes <= MAX_STORED_BODY_BYTES;
}

/**
 * Whether finished messages go into gsi3 under `EXPIRES#`, for the local sweep to delete them: the
 * embedded store has no TTL. On AWS, DynamoDB's TTL deletes them (and their body items) at no cost.
 */
export const sweptForExpiry = () => !runtimeConfig().storeDeletesExpiredItems;

const MESSAGE_FIELDS = [
  'account', 'webhookId', 'messageId', 'eventType', 'createdAt', 'status', 'attempts', 'scheduledAttempts',
  'nextAttemptAt', 'sweepAt', 'claimedUntil', 'manual', 'waitingForActivation', 'bodyKept', 'attemptLog', 'expiresAt', 'backfillId',
  'transactionHash', 'blockNumber',
] as const;

export function toMessageState(item: Item): MessageState {
  const message = {} as Record<string, unknown>;
  for (const field of MESSAGE_FIELDS) if (item[field] !== undefined) message[field] = item[field];
  return message as unknown as MessageState;
}

/**
 * The message's body: its event from its body item inside the envelope of its ids; or, for a message
 * recorded before bodies had their own item, from the state item itself. Undefined when the body
 * item is not among those given.
 */
function bodyOf(state: Item, bodyItem?: Item): string | undefined {
  if (typeof state.body === 'string') return state.body;
  if (state.bodyGzip instanceof Uint8Array) return gunzipSync(state.bodyGzip).toString('utf8');
  if (!(bodyItem?.event instanceof Uint8Array)) return undefined;
  const { before, after } = envelopeAround(toMessageState(state));
  return `${before}${inflateRawSync(bodyItem.event).toString('utf8')}${after}`;
}

const keyOf = ({ account, webhookId, messageId }: MessageRef) => messageKey(account, webhookId, messageId);
export const bodyKeyOf = ({ account, webhookId, messageId }: MessageRef) => messageBodyKey(account, webhookId, messageId);

/** No attempt holds the message at `:now`. */
const UNCLAIMED = '(attribute_not_exists(claimedUntil) OR claimedUntil <= :now)';

/** The message's body as stored (compressed); NotificationTooLarge when it cannot be. */
function storedBodyOf({ event, ...message }: NewMessage): Uint8Array {
  const { before, after } = envelopeAround(message);
  const bytes = Buffer.byteLength(before) + event.bytes + Buffer.byteLength(after);
  if (bytes > MAX_NOTIFICATION_BYTES) throw new NotificationTooLarge(bytes, bytes);
  const stored = event.compressed();
  if (stored.byteLength > MAX_STORED_BODY_BYTES) throw new NotificationTooLarge(bytes, stored.byteLength);
  return stored;
}

const bodyItemOf = (message: NewMessage, stored: Uint8Array): Item => ({ ...bodyKeyOf(message), event: stored, expiresAt: retentionEndOf(message.createdAt) });

/**
 * The body items of many new messages at once (a full block's), batch-written: of those not recorded
 * yet (one batch read of their states), since a message recorded before may have had its body kept
 * past the retention. Returns, per message, whether its body is stored and its state still to be put
 * (putNewMessage with `bodyStored`), false when it was recorded before, or why its body cannot be
 * stored. A body written twice (two recorders at once) is the same item: a message's body follows from its id.
 */
export async function putNewMessageBodies(messages: NewMessage[]): Promise<(boolean | Error)[]> {
  const bodies = messages.map((message) => {
    try {
      return storedBodyOf(message);
    } catch (error) {
      return error as Error;
    }
  });
  const { items } = await readItems(messages.map(keyOf), ['pk', 'sk']);
  const recorded = new Set(items.map(keyText));
  const unrecorded = messages.map((message, index) => !recorded.has(keyText(keyOf(message))) && !(bodies[index] instanceof Error));
  await writeItems(messages.flatMap((message, index) => (unrecorded[index] ? [{ put: bodyItemOf(message, bodies[index] as Uint8Array) }] : [])));
  return bodies.map((body, index) => (body instanceof Error ? body : unrecorded[index]!));
}

/**
 * Records a new pending message, due now and swept up at `message.sweepAt`: its body item first
 * (it expires with the retention, or is kept while the message waits; `bodyStored`: written already
 * by putNewMessageBodies), then its state, which is what makes it recorded. False when it was already
 * recorded (the same id); NotificationTooLarge when its body cannot be stored.
 */
export async function putNewMessage(message: NewMessage, { bodyStored = false } = {}): Promise<boolean> {
  if (!bodyStored) {
    // Never written over: a message recorded again may have had its body kept past the retention.
    await conditionHeld(putItem({ TableName: tableName(), Item: bodyItemOf(message, storedBodyOf(message)), ConditionExpression: 'attribute_not_exists(pk)' }));
  }
  const { event: _body, ...state } = message;
  return conditionHeld(
    putItem({
      TableName: tableName(),
      Item: {
        ...keyOf(state),
        ...messageDueIndexKey(state.messageId, state.sweepAt!),
        ...state,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

/** The message's state, read strongly consistent (claims are conditioned on what is read of it). */
export async function getMessageState(ref: MessageRef): Promise<MessageState | undefined> {
  const item = await getItem({ TableName: tableName(), Key: keyOf(ref), ConsistentRead: true });
  return item && toMessageState(item);
}

/** The message with its body, both read strongly consistent. */
export async function getMessage(ref: MessageRef): Promise<Message | undefined> {
  const [state, bodyItem] = await Promise.all([
    getItem({ TableName: tableName(), Key: keyOf(ref), ConsistentRead: true }),
    getItem({ TableName: tableName(), Key: bodyKeyOf(ref), ConsistentRead: true }),
  ]);
  const body = state && bodyOf(state, bodyItem);
  return body === undefined ? undefined : { ...toMessageState(state!), body };
}

/**
 * The message read as `state`, with its body from `bodyItem` when given (read with other items,
 * perhaps a moment old); read here, strongly consistent, when not. Undefined when it has none.
 */
export async function withBody(state: MessageState, bodyItem?: Item): Promise<Message | undefined> {
  const body = bodyOf(state as unknown as Item, bodyItem) ?? (await getMessage(state))?.body;
  return body === undefined ? undefined : { ...state, body };
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
export async function recordAttempt(message: MessageState, claimedUntil: number, attempt: Attempt, result: AttemptResult): Promise<boolean> {
  const attemptLog = [...message.attemptLog, attempt].slice(-ATTEMPTS_KEPT);
  const scheduledAttempts = message.scheduledAttempts + (attempt.trigger === 'scheduled' ? 1 : 0);
  const values: Item = {
    ':status': result.status,
    ':attempts': message.attempts + 1,
    ':scheduled': scheduledAttempts,
    ':log': attemptLog,
    ':claimed': claimedUntil,
  };
  const set = ['#status = :status', 'attempts = :attempts', 'scheduledAttempts = :scheduled', 'attemptLog = :log'];
  const remove = ['manual', 'claimedUntil', 'waitingForActivation'];
  if (result.status === 'pending') {
    const due = messageDueIndexKey(message.messageId, result.sweepAt);
    set.push('nextAttemptAt = :next', 'sweepAt = :sweepAt', 'gsi3pk = :gsi3pk', 'gsi3sk = :gsi3sk');
    Object.assign(values, { ':next': result.nextAttemptAt, ':sweepAt': result.sweepAt, ':gsi3pk': due.gsi3pk, ':gsi3sk': due.gsi3sk });
    // In gsi2 only if an earlier version put it there (removing an absent key writes nothing).
    remove.push(GSI2.partitionKey);
  } else {
    set.push('expiresAt = :expiresAt');
    values[':expiresAt'] = result.expiresAt;
    remove.push('nextAttemptAt', 'sweepAt', 'bodyKept');
    if (result.status === 'failed') {
      set.push(`${GSI2.partitionKey} = :gsi2pk`);
      values[':gsi2pk'] = messageStatusPartition(message.account, message.webhookId, 'failed');
    } else {
      remove.push(GSI2.partitionKey);
    }
    if (sweptForExpiry()) {
      const expiry = messageExpiryIndexKey(message.messageId, result.expiresAt * 1000);
      set.push('gsi3pk = :gsi3pk', 'gsi3sk = :gsi3sk');
      Object.assign(values, { ':gsi3pk': expiry.gsi3pk, ':gsi3sk': expiry.gsi3sk });
    } else {
      remove.push('gsi3pk', 'gsi3sk');
    }
  }
  // What it was before the write: whether its body was kept (parked since it was read, perhaps).
  const before = await unlessConditionFails(
    updateItem({
      TableName: tableName(),
      Key: keyOf(message),
      UpdateExpression: `SET ${set.join(', ')} REMOVE ${remove.join(', ')}`,
      ConditionExpression: 'claimedUntil = :claimed',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: values,
      ReturnValues: 'UPDATED_OLD',
    }),
  );
  if (!before) {
    await addToAttemptLog(message, attempt);
    return false;
  }
  if (result.status !== 'pending' && before.bodyKept) await setBodyExpiry(message, result.expiresAt);
  return true;
}

/** An attempt whose claim was lost: logged, and counted, without changing what the message waits for. */
async function addToAttemptLog(message: MessageState, attempt: Attempt): Promise<void> {
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

/** Gives a body its expiry (Unix seconds), or, without one, keeps it until it is given one. */
async function setBodyExpiry(ref: MessageRef, expiresAt: number | undefined): Promise<void> {
  await conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: bodyKeyOf(ref),
      ...(expiresAt === undefined
        ? { UpdateExpression: 'REMOVE expiresAt' }
        : { UpdateExpression: 'SET expiresAt = :expiresAt', ExpressionAttributeValues: { ':expiresAt': expiresAt } }),
      ConditionExpression: 'attribute_exists(pk)',
    }),
  );
}

/** Deletes a message's body once its state is deleted. */
async function deleteBody(ref: MessageRef): Promise<void> {
  await deleteItem({ TableName: tableName(), Key: bodyKeyOf(ref) });
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
    ':gsi3pk': due.gsi3pk,
    ':gsi3sk': due.gsi3sk,
    ':at': options.at,
    ':sweepAt': options.sweepAt,
    ':now': options.now,
  };
  let update = 'SET #status = :pending, gsi3pk = :gsi3pk, gsi3sk = :gsi3sk, nextAttemptAt = :at, sweepAt = :sweepAt';
  if (options.manual) update += ', manual = :true';
  if (options.waitingForActivation) {
    update += ', waitingForActivation = :true, gsi2pk = :gsi2pk';
    values[':gsi2pk'] = messageStatusPartition(ref.account, ref.webhookId, 'pending');
  }
  if (options.manual || options.waitingForActivation) values[':true'] = true;
  update += options.waitingForActivation ? ' REMOVE claimedUntil, expiresAt' : ' REMOVE claimedUntil, expiresAt, waitingForActivation, gsi2pk';
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
 * nothing while it waits, and into gsi2, where the webhook's activation finds it to queue it again
 * (lib/deliveries/resume.ts).
 * Conditioned like a claim: no attempt holds it and it is as the caller read it. Its body is kept
 * past the retention while it waits, as its state is: told so first, so that a crash never leaves a
 * parked message with a body that expires; given its expiry back if the message was not parked.
 */
export async function parkMessage(ref: MessageRef & { createdAt: number }, seenNextAttemptAt: number, now: number): Promise<boolean> {
  await setBodyExpiry(ref, undefined);
  const parked = await conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: keyOf(ref),
      UpdateExpression: 'SET waitingForActivation = :true, bodyKept = :true, gsi2pk = :gsi2pk REMOVE gsi3pk, gsi3sk, sweepAt, claimedUntil',
      ConditionExpression: `#status = :pending AND nextAttemptAt = :seen AND ${UNCLAIMED}`,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':true': true,
        ':gsi2pk': messageStatusPartition(ref.account, ref.webhookId, 'pending'),
        ':pending': 'pending',
        ':seen': seenNextAttemptAt,
        ':now': now,
      },
    }),
  );
  if (!parked) await setBodyExpiry(ref, retentionEndOf(ref.createdAt));
  return parked;
}

/** The state items of `entries` (from gsi2, keys only), in their order: those still as the index says. */
async function statesOf(entries: Item[], wanted: (message: MessageState) => boolean): Promise<MessageState[]> {
  if (entries.length === 0) return [];
  const keys = entries.map(({ pk, sk }) => ({ pk, sk }) as TableKey);
  const { items } = await readItems(keys);
  const byKey = new Map(items.map((item) => [keyText(item), toMessageState(item)]));
  return keys.flatMap((key) => {
    const message = byKey.get(keyText(key));
    return message && wanted(message) ? [message] : [];
  });
}

/** A page of the webhook's parked messages (pending, waiting for activation), from gsi2, after `startKey`. */
export async function queryParkedMessages(account: string, webhookId: string, startKey?: Item): Promise<{ messages: MessageState[]; lastEvaluatedKey?: Item }> {
  const page = await queryItems({
    TableName: tableName(),
    IndexName: GSI2.indexName,
    KeyConditionExpression: `${GSI2.partitionKey} = :pk`,
    ExpressionAttributeValues: { ':pk': messageStatusPartition(account, webhookId, 'pending') },
    Limit: 500,
    ExclusiveStartKey: startKey,
  });
  const messages = await statesOf(page.items, (message) => message.status === 'pending' && message.waitingForActivation === true);
  return { messages, lastEvaluatedKey: page.lastEvaluatedKey };
}

/** Deletes a pending message nobody may be sent any more (its webhook is gone), unless an attempt holds it or it changed since read. */
export async function deleteUnsendableMessage(ref: MessageRef, seenNextAttemptAt: number, now: number): Promise<boolean> {
  const deleted = await conditionHeld(
    deleteItem({
      TableName: tableName(),
      Key: keyOf(ref),
      ConditionExpression: `nextAttemptAt = :seen AND ${UNCLAIMED}`,
      ExpressionAttributeValues: { ':seen': seenNextAttemptAt, ':now': now },
    }),
  );
  if (deleted) await deleteBody(ref);
  return deleted;
}

export interface MessagePageQuery {
  account: string;
  webhookId: string;
  status?: MessageStatus;
  limit: number;
  /** The last message already returned (or looked at); the page starts just after it. */
  afterId?: string;
  /** Only messages whose id (creation time) is at least this one's. */
  fromId?: string;
}

export interface MessagePage {
  /** Up to `limit`, newest first. */
  messages: MessageState[];
  /**
   * When fewer than `limit` came back but more may follow: the last message looked at, where the
   * next page starts. Pending and delivered messages are read from the log, past the others: a call
   * looks at LOOKED_AT_PER_CALL at most.
   */
  lookedUpTo?: string;
}

/** How many messages of the log one call for pending or delivered ones reads past at most: a bounded cost whatever the log holds. */
export const LOOKED_AT_PER_CALL = 1000;

/**
 * Up to `limit` messages of the webhook, newest first: all of them from the log (its partitions
 * merged); failed ones from gsi2; pending and delivered ones from the log, past the others.
 */
export async function queryMessages(query: MessagePageQuery): Promise<MessagePage> {
  const { account, webhookId, status, limit, afterId, fromId } = query;
  const indexed = status === 'failed';
  const filtered = status === 'pending' || status === 'succeeded';
  const keys = indexed ? { partitionKey: GSI2.partitionKey, sortKey: TABLE_KEYS.sortKey } : TABLE_KEYS;
  const range = fromId === undefined ? `begins_with(${keys.sortKey}, :prefix)` : `${keys.sortKey} BETWEEN :from AND :to`;
  const bounds: Item = fromId === undefined ? { ':prefix': MESSAGE_SORT_KEY_PREFIX } : { ':from': messageSortKey(fromId), ':to': `${MESSAGE_SORT_KEY_PREFIX}~` };
  const partitions = indexed ? [messageStatusPartition(account, webhookId, status)] : messagePartitions(account, webhookId);
  const streams = partitions.map((partition): LogStream => {
    let startKey: Item | undefined;
    if (afterId !== undefined) {
      startKey = indexed ? { ...messageKey(account, webhookId, afterId), [GSI2.partitionKey]: partition } : { pk: partition, sk: messageSortKey(afterId) };
    }
    const read = pageReader({
      TableName: tableName(),
      IndexName: indexed ? GSI2.indexName : undefined,
      ConsistentRead: indexed ? undefined : true,
      KeyConditionExpression: `${keys.partitionKey} = :pk AND ${range}`,
      FilterExpression: filtered ? '#status = :status' : undefined,
      ExpressionAttributeNames: filtered ? { '#status': 'status' } : undefined,
      ExpressionAttributeValues: { ':pk': partition, ...bounds, ...(filtered ? { ':status': status } : {}) },
      ScanIndexForward: false,
      ExclusiveStartKey: startKey,
    });
    return { read, buffer: [], bound: startKey?.sk as string | undefined, done: false, fetches: 0 };
  });
  const messagesOf = (items: Item[]) => (indexed ? statesOf(items, (message) => message.status === status) : Promise.resolve(items.map(toMessageState)));
  return mergeNewestFirst(streams, messagesOf, limit, filtered ? LOOKED_AT_PER_CALL : undefined);
}

/** One partition of a log (or of gsi2), read newest first a page at a time, as the merge needs it. */
interface LogStream {
  /** The partition's next page, of up to `size` entries: one Query. */
  read(size: number): Promise<QueryPage | undefined>;
  /** Read, not yet returned: newest first. */
  buffer: MessageState[];
  /** The sort key of the last entry read: what is still unread sorts below it. */
  bound?: string;
  done: boolean;
  fetches: number;
}

/**
 * Up to `limit` messages of `streams`, newest first. A message is returned only once no stream can
 * still hold a newer one; a stream with nothing read ahead is read again, the more the more often.
 * With a `budget` of entries looked at, the page may end short, with where it looked up to.
 */
async function mergeNewestFirst(streams: LogStream[], messagesOf: (items: Item[]) => Promise<MessageState[]>, limit: number, budget?: number): Promise<MessagePage> {
  const messages: MessageState[] = [];
  const sortKeyOf = (message: MessageState) => messageSortKey(message.messageId);
  let lookedAt = 0;
  for (;;) {
    while (messages.length < limit) {
      const ahead = streams.filter((stream) => stream.buffer.length > 0);
      if (ahead.length === 0) break;
      const newest = ahead.reduce((best, stream) => (sortKeyOf(stream.buffer[0]!) > sortKeyOf(best.buffer[0]!) ? stream : best));
      const newestKey = sortKeyOf(newest.buffer[0]!);
      if (streams.some((stream) => stream.buffer.length === 0 && !stream.done && (stream.bound === undefined || stream.bound > newestKey))) break;
      messages.push(newest.buffer.shift()!);
    }
    const unread = streams.filter((stream) => stream.buffer.length === 0 && !stream.done);
    if (messages.length >= limit || unread.length === 0) return { messages };
    if (budget !== undefined && lookedAt >= budget) {
      const lookedUpTo = unread.reduce((highest, stream) => (stream.bound! > highest ? stream.bound! : highest), '');
      return { messages, lookedUpTo: messageIdOfSortKey(lookedUpTo) };
    }
    const share = Math.ceil((limit - messages.length) / streams.length) + 1;
    await Promise.all(
      unread.map(async (stream) => {
        let size = share * 2 ** stream.fetches;
        if (budget !== undefined) size = Math.max(1, Math.min(size, Math.floor((budget - lookedAt) / unread.length)));
        const page = await stream.read(size);
        stream.fetches += 1;
        stream.done = page?.lastEvaluatedKey === undefined;
        if (page === undefined) return;
        lookedAt += page.scannedCount;
        stream.buffer.push(...(await messagesOf(page.items)));
        stream.bound = page.lastEvaluatedKey?.[TABLE_KEYS.sortKey] as string | undefined;
      }),
    );
  }
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

/**
 * Pending messages whose sweep time has passed by `now`, oldest first in each shard of the due-time
 * index, up to `limitPerShard` from each; each is given the sweep time `nextSweepAt`. Those whose
 * sweep time another sweep or an attempt moved since they were read are left out.
 */
export async function takeDueMessages(now: number, limitPerShard: number, nextSweepAt: number): Promise<MessageRef[]> {
  const taken = await Promise.all(
    duePartitions().map(async (partition) => {
      const due = await queryTimeIndex(partition, now, limitPerShard);
      const postponed = await Promise.all(due.map((entry) => postponeSweep(entry, entry.at, nextSweepAt)));
      return due.filter((_, index) => postponed[index]);
    }),
  );
  return taken.flat().map(({ account, webhookId, messageId }) => ({ account, webhookId, messageId }));
}

const EXPIRED_BATCH = 100;

/**
 * What `read` finds expired in each gsi3 partition (items whose retention ended: in the index only
 * where the store deletes no expired items itself), a batch at a time, partition after partition. A
 * partition is read again from its start while its last batch was full: the caller deletes each batch
 * before asking for the next.
 */
export async function* expiredBatches<T>(partitions: string[], read: (partition: string, limit: number) => Promise<T[]>): AsyncGenerator<T[]> {
  for (const partition of partitions) {
    for (;;) {
      const expired = await read(partition, EXPIRED_BATCH);
      yield expired;
      if (expired.length < EXPIRED_BATCH) break;
    }
  }
}

/** Finished messages whose retention ended by `now`, shard after shard (expiredBatches). */
export const expiredMessageBatches = (now: number) => expiredBatches(expiryPartitions(), (partition, limit) => queryTimeIndex(partition, now, limit));

/** The items of one gsi3 partition whose time has come (due, or expired), at most `limit`, earliest first. */
export async function queryTimeIndexItems(partition: string, now: number, limit: number): Promise<Item[]> {
  const page = await queryItems({
    TableName: tableName(),
    IndexName: GSI3.indexName,
    KeyConditionExpression: `${GSI3.partitionKey} = :pk AND ${GSI3.sortKey} <= :now`,
    ExpressionAttributeValues: { ':pk': partition, ':now': timeKeyBound(now) },
    Limit: limit,
  });
  return page.items;
}

/** Messages of one gsi3 partition whose time has come: due ones, or expired ones. */
async function queryTimeIndex(partition: string, now: number, limit: number): Promise<Array<MessageRef & { at: number }>> {
  const items = await queryTimeIndexItems(partition, now, limit);
  return items.map((item) => ({ ...messageRefOfKey(item as TableKey), at: Number(String(item.gsi3sk).split('#')[0]) }));
}

/** Deletes a message, and its body, if it is still finished and expired (a retry may have brought it back). */
export async function deleteExpiredMessage(ref: MessageRef, now: number): Promise<boolean> {
  const deleted = await conditionHeld(
    deleteItem({
      TableName: tableName(),
      Key: keyOf(ref),
      ConditionExpression: '#status <> :pending AND expiresAt <= :now',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':pending': 'pending', ':now': Math.floor(now / 1000) },
    }),
  );
  if (deleted) await deleteBody(ref);
  return deleted;
}

/**
 * Moves the messages an earlier version recorded (their status in gsi1, which projected every
 * attribute) to the status index of today: failed and parked ones into gsi2, all out of gsi1.
 * `created`: a table just made, with nothing to move. Returns how many it moved.
 */
export async function moveMessagesToStatusIndex(client: DynamoDBClient, table: string, { created }: { created: boolean }): Promise<number> {
  const scan = {
    FilterExpression: 'begins_with(sk, :message) AND attribute_exists(gsi1pk)',
    ProjectionExpression: 'pk, sk, account, webhookId, #status, waitingForActivation',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: marshall({ ':message': MESSAGE_SORT_KEY_PREFIX }),
  };
  return moveOnce(client, table, messageStatusIndexMarkKey, created, scan, async (item) => {
    const indexed = item.status === 'failed' || (item.status === 'pending' && item.waitingForActivation === true);
    await client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: marshall({ pk: item.pk, sk: item.sk }),
        UpdateExpression: indexed ? 'SET gsi2pk = :gsi2pk REMOVE gsi1pk, gsi1sk' : 'REMOVE gsi1pk, gsi1sk',
        ...(indexed ? { ExpressionAttributeValues: marshall({ ':gsi2pk': messageStatusPartition(item.account, item.webhookId, item.status) }) } : {}),
      }),
    );
  });
}

/**
 * Moves the messages (states and bodies) an earlier version kept in one partition per webhook to
 * the partitions of today (`MESSAGE_PARTITIONS`): a copy is written only where none is yet, then the
 * original deleted, so that a start interrupted half way moves the rest next time. Returns how many
 * items it moved.
 */
export async function spreadMessagePartitions(client: DynamoDBClient, table: string, { created }: { created: boolean }): Promise<number> {
  const scan = {
    FilterExpression: '(begins_with(sk, :message) OR begins_with(sk, :body)) AND contains(pk, :log)',
    ExpressionAttributeValues: marshall({ ':message': MESSAGE_SORT_KEY_PREFIX, ':body': MESSAGE_BODY_SORT_KEY_PREFIX, ':log': '#MESSAGES' }),
  };
  return moveOnce(client, table, messagePartitionsMarkKey, created, scan, async (item) => {
    if (!isUnspreadMessagePartition(item.pk)) return false;
    const messageId = String(item.sk).slice(String(item.sk).indexOf('#') + 1);
    const copy = new PutItemCommand({ TableName: table, Item: marshall({ ...item, pk: spreadMessagePartition(item.pk, messageId) }), ConditionExpression: 'attribute_not_exists(pk)' });
    await conditionHeld(client.send(copy));
    await client.send(new DeleteItemCommand({ TableName: table, Key: marshall({ pk: item.pk, sk: item.sk }) }));
  });
}

