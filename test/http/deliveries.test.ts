import { createHmac, randomUUID } from 'node:crypto';
import { canonicalize } from 'json-canonicalize';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { standardWebhooksSecret, verifyNotification } from '../../lib/deliveries/signing';
import { randomAddress } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { startReceiver, type Answer, type Receiver, type ReceivedRequest } from '../support/receiver';
import { until } from '../support/until';
import { expectError } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

// A whole schedule in about a second: attempt 2 after 0.2 s, 3 after 0.4 s, 4 after 0.6 s.
const client = useLocalService({
  DELIVERY_RETRY_SCHEDULE: '0.2,0.4,0.6',
  DELIVERY_TIMEOUT_SECONDS: '1',
  DELIVERY_SWEEP_GRACE_SECONDS: '1',
});
const api = webhooksApi(client);

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function receiver(answer?: (index: number, request: ReceivedRequest) => Answer): Promise<Receiver> {
  const started = await startReceiver(answer);
  receivers.push(started);
  return started;
}

/** A new account with a secret, and a webhook of it that notifies `url`. */
async function setUp(url: string, overrides: Record<string, unknown> = {}, options: { secret?: boolean } = {}) {
  const key = await api.newAccountKey();
  let secret: string | undefined;
  if (options.secret !== false) {
    const rotated = await client.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key });
    secret = rotated.body.secret;
  }
  const webhook = await api.create(key, { url, ...overrides });
  return { key, secret, id: webhook.id as string, webhook };
}

const deliveriesPath = (id: string, query: Record<string, string> = {}) => {
  const search = new URLSearchParams(query);
  return search.size ? `/v1/webhooks/${id}/deliveries?${search}` : `/v1/webhooks/${id}/deliveries`;
};

async function delivery(key: string, id: string, messageId: string) {
  const response = await client.call('GET', `/v1/webhooks/${id}/deliveries/${messageId}`, { key });
  expect(response.status).toBe(200);
  return response.body;
}

/** Polls the message until `done` holds for it. */
const deliveryWhen = (key: string, id: string, messageId: string, done: (entry: any) => boolean, timeoutMs = 10_000) =>
  until(`message ${messageId} reaches the expected state`, timeoutMs, () => delivery(key, id, messageId), done, 50);

const webhookStatusWhen = (key: string, id: string, status: string) =>
  until(`webhook ${id} is ${status}`, 10_000, () => api.get(key, id), (webhook) => webhook.status === status, 50);

describe('a test notification', () => {
  it('arrives once, as canonical JSON, signed in both forms, and is logged as succeeded', async () => {
    const target = await receiver();
    const address = randomAddress();
    const { key, id, secret } = await setUp(target.url, { metadata: { addresses: [address] }, includeLogs: true });
    const messageId = await api.sendTest(key, id);
    const [request] = await target.waitFor(1);
    await sleep(200);
    expect(target.requests).toHaveLength(1);

    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/hook');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['user-agent']).toMatch(/^webhook-management-service\/\d+\.\d+\.\d+$/);
    const body = JSON.parse(request!.body);
    expect(body).toMatchObject({ webhookId: id, eventType: 'address_activity', messageId });
    expect(canonicalize(body)).toBe(request!.body);
    expect(body.event.transaction).toMatchObject({ from: address, blockNumber: '0', chainId: '43114', erc20Transfers: [] });
    expect(body.event.logs).toEqual([]);
    expect(body.event.transaction).not.toHaveProperty('internalTransactions');

    const key32 = Buffer.from(secret!, 'hex');
    expect(request!.headers['x-signature']).toBe(createHmac('sha256', key32).update(request!.body).digest('base64'));
    expect(request!.headers['webhook-id']).toBe(messageId);
    expect(Math.abs(Number(request!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(10);
    expect(() => new StandardWebhook(standardWebhooksSecret(secret!)).verify(request!.body, request!.headers as Record<string, string>)).not.toThrow();

    const entry = await deliveryWhen(key, id, messageId, (message) => message.status === 'succeeded');
    expect(entry).toMatchObject({ messageId, eventType: 'address_activity', status: 'succeeded', attempts: 1, lastResponseStatusCode: 200 });
    expect(entry).not.toHaveProperty('nextAttemptAt');
    expect(entry.body).toBe(request!.body);
    expect(entry.attemptHistory).toEqual([
      expect.objectContaining({ trigger: 'scheduled', statusCode: 200, responseBody: '{"ok":true}', durationMs: expect.any(Number) }),
    ]);
  });

  it("is logged with its transaction's hash and block number, in the list and the detail", async () => {
    const target = await receiver();
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    const [request] = await target.waitFor(1);
    const { txHash, blockNumber } = JSON.parse(request!.body).event.transaction;
    expect(txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(blockNumber).toBe('0');

    const detail = await delivery(key, id, messageId);
    expect(detail).toMatchObject({ transactionHash: txHash, blockNumber: '0' });
    const log = await client.call('GET', deliveriesPath(id), { key });
    expect(log.status).toBe(200);
    expect(log.body.deliveries).toEqual([expect.objectContaining({ messageId, transactionHash: txHash, blockNumber: '0' })]);
  });

  it('is signed with a secret generated at the first notification when the account has none', async () => {
    const target = await receiver();
    const { key, id } = await setUp(target.url, {}, { secret: false });
    await api.sendTest(key, id);
    const [request] = await target.waitFor(1);
    const { body } = await client.call('GET', '/v1/webhooks:getSharedSecret', { key });
    expect(body.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(verifyNotification({ rawBody: request!.body, headers: request!.headers as Record<string, string>, secret: body.secret })).toEqual({
      xSignature: true,
      standardWebhooks: true,
    });
  });

  /** A test notification sent after the account's secret was rotated with `query`: its body, headers and both secrets. */
  async function notifiedAfterRotation(query: string) {
    const target = await receiver();
    const { key, id, secret: previous } = await setUp(target.url);
    const { body: rotated } = await client.call('POST', `/v1/webhooks:generateOrRotateSharedSecret${query}`, { key });
    await api.sendTest(key, id);
    const [request] = await target.waitFor(1);
    return { rawBody: request!.body, headers: request!.headers as Record<string, string>, current: rotated.secret as string, previous: previous! };
  }

  it('carries signatures with the new and the previous secret after a rotation; x-signature uses the new one', async () => {
    const { rawBody, headers, current, previous } = await notifiedAfterRotation('');
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [current, previous]) {
      expect(() => new StandardWebhook(standardWebhooksSecret(secret)).verify(rawBody, headers)).not.toThrow();
    }
    expect(verifyNotification({ rawBody, headers, secret: current }).xSignature).toBe(true);
    expect(verifyNotification({ rawBody, headers, secret: previous }).xSignature).toBe(false);
  });

  it('carries only the new signature after a rotation with endGracePeriod=true', async () => {
    const { rawBody, headers, current, previous } = await notifiedAfterRotation('?endGracePeriod=true');
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verifyNotification({ rawBody, headers, secret: current })).toEqual({ xSignature: true, standardWebhooks: true });
    expect(verifyNotification({ rawBody, headers, secret: previous })).toMatchObject({ xSignature: false, standardWebhooks: false });
  });

  it('of an inactive webhook is a 400 that says so', async () => {
    const { key, id } = await setUp('http://127.0.0.1:9/hook');
    await client.call('DELETE', `/v1/webhooks/${id}`, { key });
    const response = await client.call('POST', `/v1/webhooks/${id}/test`, { key });
    expect(expectError(response, 400)).toMatch(/inactive/);
  });

  it("of another account's or an unknown webhook is a 404", async () => {
    const { id } = await setUp('http://127.0.0.1:9/hook');
    const other = await api.newAccountKey();
    expectError(await client.call('POST', `/v1/webhooks/${id}/test`, { key: other }), 404);
    expectError(await client.call('POST', `/v1/webhooks/${randomUUID()}/test`, { key: other }), 404);
  });
});

describe('retries', () => {
  it('follow the schedule after 500s, with the same messageId, until one succeeds', async () => {
    const target = await receiver((index) => (index < 2 ? { status: 500, body: 'down' } : { status: 200 }));
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    const requests = await target.waitFor(3);
    expect(new Set(requests.map((request) => JSON.parse(request.body).messageId))).toEqual(new Set([messageId]));
    expect(new Set(requests.map((request) => request.body)).size).toBe(1);
    // 0.2 s then 0.4 s, each ±10 %.
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(170);
    expect(requests[2]!.at - requests[1]!.at).toBeGreaterThanOrEqual(350);
    const entry = await deliveryWhen(key, id, messageId, (message) => message.status === 'succeeded');
    expect(entry.attempts).toBe(3);
    expect(entry.attemptHistory.map((attempt: any) => attempt.statusCode)).toEqual([500, 500, 200]);
    expect(entry.attemptHistory[0]).toMatchObject({ error: 'HTTP 500', responseBody: 'down' });
  });

  it('show a pending message with its next attempt in the log', async () => {
    const target = await receiver(() => ({ status: 503 }));
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    await target.waitFor(1);
    const entry = await deliveryWhen(key, id, messageId, (message) => message.attempts >= 1);
    if (entry.status === 'pending') expect(entry.nextAttemptAt).toBeGreaterThan(entry.lastAttemptAt);
    expect(entry.lastResponseStatusCode).toBe(503);
  });

  it('end in failed after the last attempt, which deactivates the webhook', async () => {
    const target = await receiver(() => ({ status: 500 }));
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    await target.waitFor(4);
    const entry = await deliveryWhen(key, id, messageId, (message) => message.status === 'failed');
    expect(entry.attempts).toBe(4);
    await webhookStatusWhen(key, id, 'inactive');
    await sleep(1000);
    expect(target.requests).toHaveLength(4);
  });

  it('count a timeout as a failure', async () => {
    const target = await receiver((index) => (index === 0 ? 'hang' : { status: 200 }));
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    await target.waitFor(2);
    const entry = await deliveryWhen(key, id, messageId, (message) => message.status === 'succeeded');
    expect(entry.attemptHistory[0]).toMatchObject({ error: expect.stringMatching(/timeout/) });
    expect(entry.attemptHistory[0].durationMs).toBeGreaterThanOrEqual(900);
  });

  it('do not follow a redirect: a 3xx is a failure', async () => {
    const elsewhere = await receiver();
    const target = await receiver((index) => (index === 0 ? { status: 302, headers: { location: elsewhere.url } } : { status: 200 }));
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    await target.waitFor(2);
    const entry = await deliveryWhen(key, id, messageId, (message) => message.status === 'succeeded');
    expect(entry.attemptHistory[0]).toMatchObject({ statusCode: 302, error: expect.stringMatching(/redirect/) });
    expect(elsewhere.requests).toHaveLength(0);
  });

  it('stop at a 410 Gone, which deactivates the webhook at once', async () => {
    const target = await receiver(() => ({ status: 410 }));
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    const entry = await deliveryWhen(key, id, messageId, (message) => message.status === 'failed');
    expect(entry.attempts).toBe(1);
    await webhookStatusWhen(key, id, 'inactive');
    await sleep(500);
    expect(target.requests).toHaveLength(1);
  });

  it("honour a 429's Retry-After within the schedule's next two steps", async () => {
    const target = await receiver((index) => (index === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
    const { key, id } = await setUp(target.url);
    await api.sendTest(key, id);
    const [first, second] = await target.waitFor(2);
    // The schedule says 0.2 s and the receiver asked for 1 s: honoured up to the step after the next (0.4 s).
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(350);
    expect(second!.at - first!.at).toBeLessThan(900);
  });

  it('count a refused connection as a failure, with what happened', async () => {
    const closed = await receiver();
    const url = closed.url;
    await closed.close();
    receivers.splice(receivers.indexOf(closed), 1);
    const { key, id } = await setUp(url);
    const messageId = await api.sendTest(key, id);
    const entry = await deliveryWhen(key, id, messageId, (message) => message.attempts >= 1);
    expect(entry.lastError).toMatch(/refused/i);
    expect(entry).not.toHaveProperty('lastResponseStatusCode');
  });
});

describe('an inactive webhook', () => {
  it('gets nothing while inactive; its pending messages wait, and go once it is active again', async () => {
    let failing = true;
    const target = await receiver(() => (failing ? { status: 500 } : { status: 200 }));
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    await target.waitFor(1);
    await client.call('DELETE', `/v1/webhooks/${id}`, { key });
    const waiting = await deliveryWhen(key, id, messageId, (message) => message.waitingForActivation === true);
    expect(waiting.status).toBe('pending');
    const before = target.requests.length;
    await sleep(800);
    expect(target.requests.length).toBe(before);
    const listed = await client.call('GET', deliveriesPath(id, { status: 'pending' }), { key });
    expect(listed.body.deliveries).toEqual([expect.objectContaining({ messageId, waitingForActivation: true })]);

    // Active again: the next attempt goes (and fails here), and the message no longer waits.
    await client.call('PATCH', `/v1/webhooks/${id}`, { key, body: { status: 'active' } });
    await target.waitFor(before + 1);
    const retrying = await deliveryWhen(key, id, messageId, (message) => message.attempts === before + 1);
    expect(retrying.status).toBe('pending');
    expect(retrying).not.toHaveProperty('waitingForActivation');
    failing = false;
    await deliveryWhen(key, id, messageId, (message) => message.status === 'succeeded');
  });
});

describe('retry and recover', () => {
  it('retry sends a succeeded message again now, with the same messageId, as a manual attempt', async () => {
    const target = await receiver();
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    await deliveryWhen(key, id, messageId, (message) => message.status === 'succeeded');
    const response = await client.call('POST', `/v1/webhooks/${id}/deliveries/${messageId}/retry`, { key });
    expect(response.status).toBe(202);
    expect(response.body).toEqual({ messageId });
    const [first, second] = await target.waitFor(2);
    expect(second!.body).toBe(first!.body);
    const entry = await deliveryWhen(key, id, messageId, (message) => message.attempts === 2 && message.status === 'succeeded');
    expect(entry.attemptHistory.map((attempt: any) => attempt.trigger)).toEqual(['scheduled', 'manual']);
  });

  it('recover queues the failed messages since a time again', async () => {
    let failing = true;
    const target = await receiver(() => (failing ? { status: 500 } : { status: 200 }));
    const { key, id } = await setUp(target.url);
    const first = await api.sendTest(key, id);
    await deliveryWhen(key, id, first, (message) => message.status === 'failed');
    await webhookStatusWhen(key, id, 'inactive');
    failing = false;
    const inactive = await client.call('POST', `/v1/webhooks/${id}/recover`, { key, body: { since: 0 } });
    expect(expectError(inactive, 400)).toMatch(/inactive/);
    await client.call('PATCH', `/v1/webhooks/${id}`, { key, body: { status: 'active' } });

    const later = await client.call('POST', `/v1/webhooks/${id}/recover`, { key, body: { since: Date.now() + 60_000 } });
    expect(later.status).toBe(202);
    expect(later.body).toEqual({ messages: 0 });
    const response = await client.call('POST', `/v1/webhooks/${id}/recover`, { key, body: { since: 0 } });
    expect(response.status).toBe(202);
    expect(response.body).toEqual({ messages: 1 });
    const entry = await deliveryWhen(key, id, first, (message) => message.status === 'succeeded');
    expect(entry.attempts).toBe(5);
  });

  it.each([
    [{ since: -1 }, 'since'],
    [{ since: 'yesterday' }, 'since'],
    [{ since: 1.5 }, 'since'],
    [{}, 'since'],
    [{ since: 0, extra: true }, 'extra'],
  ])('recover with %j is a 400 naming %s', async (body, field) => {
    const { key, id } = await setUp('http://127.0.0.1:9/hook');
    expectError(await client.call('POST', `/v1/webhooks/${id}/recover`, { key, body }), 400, field);
  });

  it('recover with since in seconds is a 400 that says the unit', async () => {
    const { key, id } = await setUp('http://127.0.0.1:9/hook');
    expect(expectError(await client.call('POST', `/v1/webhooks/${id}/recover`, { key, body: { since: 1795619000 } }), 400)).toBe(
      'Invalid body field since: milliseconds since the epoch expected; 1795619000 looks like seconds (multiply by 1000), or send 0 for all',
    );
  });

  it('retry while an attempt is under way is a 409: its outcome would overwrite the retry', async () => {
    const target = await receiver((index) => (index === 0 ? 'hang' : { status: 200 }));
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    await target.waitFor(1);
    expect(await delivery(key, id, messageId)).toMatchObject({ status: 'pending', attempts: 0, attemptUnderWay: true });
    const response = await client.call('POST', `/v1/webhooks/${id}/deliveries/${messageId}/retry`, { key });
    expect(expectError(response, 409)).toMatch(/under way/);
    await deliveryWhen(key, id, messageId, (message) => message.status === 'succeeded');
  });

  it('a message of a webhook deleted for good is not found', async () => {
    const target = await receiver();
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    await deliveryWhen(key, id, messageId, (message) => message.status === 'succeeded');
    await client.call('DELETE', `/v1/webhooks/${id}?permanent=true`, { key });
    expectError(await client.call('GET', `/v1/webhooks/${id}/deliveries/${messageId}`, { key }), 404);
    expectError(await client.call('GET', deliveriesPath(id), { key }), 404);
  });

  it('retry of an unknown message is a 404; of a malformed id a 400', async () => {
    const { key, id } = await setUp('http://127.0.0.1:9/hook');
    expectError(await client.call('POST', `/v1/webhooks/${id}/deliveries/${randomUUID()}/retry`, { key }), 404);
    expectError(await client.call('POST', `/v1/webhooks/${id}/deliveries/not-a-uuid/retry`, { key }), 400, 'messageId');
    expectError(await client.call('GET', `/v1/webhooks/${id}/deliveries/not-a-uuid`, { key }), 400, 'messageId');
  });
});

describe('the delivery log', () => {
  it('lists newest first in pages, filters by status, and signs its page tokens over the webhook and filter', async () => {
    const target = await receiver();
    const { key, id } = await setUp(target.url);
    const ids: string[] = [];
    for (let index = 0; index < 5; index += 1) ids.push(await api.sendTest(key, id));
    await target.waitFor(5);
    for (const messageId of ids) await deliveryWhen(key, id, messageId, (message) => message.status === 'succeeded');

    const first = await client.call('GET', deliveriesPath(id, { pageSize: '2' }), { key });
    expect(first.status).toBe(200);
    expect(first.body.deliveries.map((entry: any) => entry.messageId)).toEqual([ids[4], ids[3]]);
    const second = await client.call('GET', deliveriesPath(id, { pageSize: '2', pageToken: first.body.nextPageToken }), { key });
    expect(second.body.deliveries.map((entry: any) => entry.messageId)).toEqual([ids[2], ids[1]]);
    const third = await client.call('GET', deliveriesPath(id, { pageSize: '2', pageToken: second.body.nextPageToken }), { key });
    expect(third.body.deliveries.map((entry: any) => entry.messageId)).toEqual([ids[0]]);
    expect(third.body).not.toHaveProperty('nextPageToken');

    const succeeded = await client.call('GET', deliveriesPath(id, { status: 'succeeded', pageSize: '100' }), { key });
    expect(succeeded.body.deliveries).toHaveLength(5);
    const failed = await client.call('GET', deliveriesPath(id, { status: 'failed' }), { key });
    expect(failed.body).toEqual({ deliveries: [], endpoint: { status: 'healthy' } });

    expectError(await client.call('GET', deliveriesPath(id, { status: 'succeeded', pageToken: first.body.nextPageToken }), { key }), 400, 'pageToken');
    const other = await setUp(target.url);
    expectError(await client.call('GET', deliveriesPath(other.id, { pageToken: first.body.nextPageToken }), { key: other.key }), 400, 'pageToken');
    expectError(await client.call('GET', deliveriesPath(id, { status: 'done' }), { key }), 400, 'status');
    expectError(await client.call('GET', deliveriesPath(id, { pageSize: '0' }), { key }), 400, 'pageSize');
  });

  it("is not readable from another account, nor its messages", async () => {
    const target = await receiver();
    const { key, id } = await setUp(target.url);
    const messageId = await api.sendTest(key, id);
    await target.waitFor(1);
    const other = await api.newAccountKey();
    expectError(await client.call('GET', deliveriesPath(id), { key: other }), 404);
    expectError(await client.call('GET', `/v1/webhooks/${id}/deliveries/${messageId}`, { key: other }), 404);
    expectError(await client.call('POST', `/v1/webhooks/${id}/deliveries/${messageId}/retry`, { key: other }), 404);
    expectError(await client.call('POST', `/v1/webhooks/${id}/recover`, { key: other, body: { since: 0 } }), 404);
    expectError(await client.call('GET', `/v1/webhooks/${id}/deliveries/${randomUUID()}`, { key }), 404);
  });
});
