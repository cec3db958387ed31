import http from 'node:http';
import { deflateRawSync } from 'node:zlib';
import { BatchGetItemCommand, GetItemCommand, PutItemCommand, UpdateItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { v7 as uuidv7 } from 'uuid';
import { runtimeConfig } from '../../lib/config/runtime';
import { canonicalBody, canonicalJson, signatureHeaders } from '../../lib/deliveries/signing';
import { USER_AGENT } from '../../lib/deliveries/user-agent';
import { dynamoDb, tableName } from '../../lib/store/client';
import { endpointHealthKey, messageBodyKey, messageDueIndexKey, messageExpiryIndexKey, messageKey, sharedSecretKey, webhookKey } from '../../lib/store/table';
import { originOf } from '../../lib/store/endpoint-health';
import { uuidv7Time } from '../../lib/uuid';

/** Where the floor sends one webhook's notifications. */
export interface FloorTarget {
  webhookId: string;
  url: string;
}

/** Stands in for the message id in a body built once: same length as a UUID. */
const ID_PLACEHOLDER = '00000000-0000-7000-8000-00000000beef';
/** The service's claim margin beyond the attempt's timeout (lib/deliveries/deliver.ts). */
const CLAIM_MARGIN_MS = 5_000;

const S = (value: string): AttributeValue => ({ S: value });
const N = (value: number): AttributeValue => ({ N: String(value) });

/** A gate of `size` slots, taken in arrival order. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(size: number) {
    this.free = size;
  }
  async take(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free += 1;
  }
}

/**
 * The floor for the delivery figures: per notification, the same store requests as the service
 * (PutItem of the same body item and message item, GetItem of the message and BatchGetItem of the
 * same 4 keys, UpdateItem to claim, UpdateItem to record, with the same expressions and index keys) and one POST of the same bytes with
 * headers of the same size over a keep-alive agent; sent with the raw SDK on the service's client,
 * items written as attribute values by hand. The bodies are built once per webhook; no dispatcher,
 * queue, signing, target guard or timeout. The same concurrency: at most `concurrency` attempts at
 * once, as many as the service's consumer runs to an endpoint known to answer fast.
 */
export class DeliveryFloor {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256, scheduling: 'lifo', timeout: 60_000 });
  private readonly slots: Slots;
  private readonly under = new Set<Promise<void>>();
  private readonly bodies = new Map<string, [string, string]>();
  private readonly storedEvent: Uint8Array;
  private readonly headers: Record<string, string>;

  constructor(
    private readonly account: string,
    private readonly event: unknown,
    concurrency: number,
  ) {
    this.slots = new Slots(concurrency);
    this.storedEvent = deflateRawSync(canonicalJson(event));
    const secret = 'ab'.repeat(32);
    // Signed once, for header values of the right size; only webhook-id changes per notification.
    this.headers = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      ...signatureHeaders({ body: '{}', messageId: ID_PLACEHOLDER, timestamp: Math.floor(Date.now() / 1000), secrets: { current: secret } }),
    };
  }

  /** Records one notification (the PutItem) and returns its id; the rest of its delivery goes on in the background. */
  async record(target: FloorTarget): Promise<string> {
    const messageId = uuidv7();
    const now = Date.now();
    const body = this.bodyOf(target.webhookId, messageId);
    const key = messageKey(this.account, target.webhookId, messageId);
    const bodyKey = messageBodyKey(this.account, target.webhookId, messageId);
    const createdAt = uuidv7Time(messageId);
    const settings = runtimeConfig().delivery;
    const sweepAt = now + settings.sweepGraceSeconds * 1000;
    const due = messageDueIndexKey(messageId, sweepAt);
    await dynamoDb().send(
      new PutItemCommand({
        TableName: tableName(),
        Item: { pk: S(bodyKey.pk), sk: S(bodyKey.sk), event: { B: this.storedEvent }, expiresAt: N(Math.floor(createdAt / 1000) + settings.retentionDays * 86_400) },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    await dynamoDb().send(
      new PutItemCommand({
        TableName: tableName(),
        Item: {
          pk: S(key.pk),
          sk: S(key.sk),
          gsi3pk: S(due.gsi3pk),
          gsi3sk: S(due.gsi3sk),
          account: S(this.account),
          webhookId: S(target.webhookId),
          messageId: S(messageId),
          eventType: S('address_activity'),
          createdAt: N(createdAt),
          status: S('pending'),
          attempts: N(0),
          scheduledAttempts: N(0),
          nextAttemptAt: N(now),
          sweepAt: N(sweepAt),
          attemptLog: { L: [] },
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    const delivery = this.deliver(target, messageId, body, now).finally(() => this.under.delete(delivery));
    this.under.add(delivery);
    return messageId;
  }

  /** Settles when every delivery under way has recorded its result. */
  async idle(): Promise<void> {
    while (this.under.size > 0) await Promise.all(this.under);
  }

  close(): void {
    this.agent.destroy();
  }

  private bodyOf(webhookId: string, messageId: string): string {
    let parts = this.bodies.get(webhookId);
    if (!parts) {
      const [before, after] = canonicalBody({ webhookId, eventType: 'address_activity', messageId: ID_PLACEHOLDER, event: this.event }).split(ID_PLACEHOLDER);
      this.bodies.set(webhookId, (parts = [before!, after!]));
    }
    return parts[0] + messageId + parts[1];
  }

  private async deliver(target: FloorTarget, messageId: string, body: string, nextAttemptAt: number): Promise<void> {
    const key = messageKey(this.account, target.webhookId, messageId);
    const itemKey = { pk: S(key.pk), sk: S(key.sk) };
    const keys = [webhookKey(this.account, target.webhookId), sharedSecretKey(this.account), endpointHealthKey(this.account, originOf(target.url)), messageBodyKey(this.account, target.webhookId, messageId)];
    await Promise.all([
      dynamoDb().send(new GetItemCommand({ TableName: tableName(), Key: itemKey, ConsistentRead: true })),
      dynamoDb().send(new BatchGetItemCommand({ RequestItems: { [tableName()]: { Keys: keys.map(({ pk, sk }) => ({ pk: S(pk), sk: S(sk) })) } } })),
    ]);
    await this.slots.take();
    try {
      const startedAt = Date.now();
      const settings = runtimeConfig().delivery;
      const claimedUntil = startedAt + settings.attemptTimeoutSeconds * 1000 + CLAIM_MARGIN_MS;
      await dynamoDb().send(
        new UpdateItemCommand({
          TableName: tableName(),
          Key: itemKey,
          UpdateExpression: 'SET claimedUntil = :until, sweepAt = :until, gsi3sk = :dueKey',
          ConditionExpression: '#status = :pending AND nextAttemptAt = :seen AND (attribute_not_exists(claimedUntil) OR claimedUntil <= :now)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':until': N(claimedUntil),
            ':dueKey': S(messageDueIndexKey(messageId, claimedUntil).gsi3sk),
            ':pending': S('pending'),
            ':seen': N(nextAttemptAt),
            ':now': N(startedAt),
          },
        }),
      );
      const { statusCode, responseBody } = await this.post(target.url, body, messageId);
      const expiresAt = Math.floor(uuidv7Time(messageId) / 1000) + settings.retentionDays * 86_400;
      const expiry = messageExpiryIndexKey(messageId, expiresAt * 1000);
      const attempt = { attemptedAt: N(startedAt), trigger: S('scheduled'), statusCode: N(statusCode), durationMs: N(Date.now() - startedAt), responseBody: S(responseBody) };
      await dynamoDb().send(
        new UpdateItemCommand({
          TableName: tableName(),
          Key: itemKey,
          UpdateExpression:
            'SET #status = :status, attempts = :attempts, scheduledAttempts = :scheduled, attemptLog = :log, expiresAt = :expiresAt, gsi3pk = :gsi3pk, gsi3sk = :gsi3sk REMOVE manual, claimedUntil, waitingForActivation, nextAttemptAt, sweepAt, bodyKept, gsi2pk',
          ConditionExpression: 'claimedUntil = :claimed',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':status': S('succeeded'),
            ':gsi3pk': S(expiry.gsi3pk),
            ':gsi3sk': S(expiry.gsi3sk),
            ':attempts': N(1),
            ':scheduled': N(1),
            ':log': { L: [{ M: attempt }] },
            ':claimed': N(claimedUntil),
            ':expiresAt': N(expiresAt),
          },
        }),
      );
    } finally {
      this.slots.release();
    }
  }

  private post(url: string, body: string, messageId: string): Promise<{ statusCode: number; responseBody: string }> {
    return new Promise((resolve, reject) => {
      const request = http.request(url, {
        method: 'POST',
        agent: this.agent,
        headers: { ...this.headers, 'webhook-id': messageId, 'content-length': String(Buffer.byteLength(body)) },
      });
      request.on('error', reject);
      request.on('response', (response) => {
        let responseBody = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (responseBody += chunk));
        response.on('end', () => resolve({ statusCode: response.statusCode ?? 0, responseBody }));
        response.on('error', reject);
      });
      request.end(body);
    });
  }
}
