import { hourOf, latencyBucketOf, latencyPercentiles } from '../../lib/deliveries/stats';
import { useLocalService } from '../support/local-service';
import { startReceiver, type Answer, type Receiver } from '../support/receiver';
import { until } from '../support/until';
import { expectError } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

// One retry 0.2 s after the first attempt: a failing receiver's message is pending once, then failed.
const client = useLocalService({
  DELIVERY_RETRY_SCHEDULE: '0.2',
  DELIVERY_TIMEOUT_SECONDS: '1',
  DELIVERY_SWEEP_GRACE_SECONDS: '1',
});
const api = webhooksApi(client);

const SLOW_MS = 300;

const receivers: Receiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
});

async function receiver(answer: Answer): Promise<Receiver> {
  const started = await startReceiver(() => answer);
  receivers.push(started);
  return started;
}

async function get(key: string, path: string) {
  const response = await client.call('GET', path, { key });
  expect(response.status).toBe(200);
  return response.body;
}

/** Polls `path` until `done` holds for its answer. */
const when = (key: string, path: string, done: (body: any) => boolean) => until(`${path} reaches the expected state`, 15_000, () => get(key, path), done, 50);

/** The attempts of the webhook's messages, as their delivery log records them. */
async function attemptsOf(key: string, id: string, messageIds: string[]) {
  const details = await Promise.all(messageIds.map((messageId) => get(key, `/v1/webhooks/${id}/deliveries/${messageId}`)));
  return details.flatMap((detail) => detail.attemptHistory as Array<{ attemptedAt: number; durationMs: number; statusCode?: number }>);
}

/** What the stats should say of these attempts, hour by hour: the latency as the histogram reports the recorded durations. */
function expectedHours(attempts: Array<{ attemptedAt: number; durationMs: number }>) {
  const byHour = new Map<number, Record<string, number>>();
  for (const { attemptedAt, durationMs } of attempts) {
    const latency = byHour.get(hourOf(attemptedAt)) ?? {};
    latency[latencyBucketOf(durationMs)] = (latency[latencyBucketOf(durationMs)] ?? 0) + 1;
    byHour.set(hourOf(attemptedAt), latency);
  }
  return byHour;
}

describe('delivery statistics', () => {
  let key: string;
  let delivered: { id: string; messageIds: string[] };
  let failing: { id: string; messageId: string };
  let slowHook: { id: string; messageId: string };

  beforeAll(async () => {
    key = await api.newAccountKey();
    // The slow receiver's attempts take at least SLOW_MS.
    const [ok, broken, slow] = [await receiver({ status: 200 }), await receiver({ status: 500 }), await receiver({ status: 200, delayMs: SLOW_MS })];
    const deliveredId = (await api.create(key, { url: ok.url, name: 'delivered' })).id;
    const failingId = (await api.create(key, { url: broken.url, name: 'failing' })).id;
    const slowId = (await api.create(key, { url: slow.url, name: 'slow' })).id;
    const first = await api.sendTest(key, deliveredId);
    failing = { id: failingId, messageId: await api.sendTest(key, failingId) };
    slowHook = { id: slowId, messageId: await api.sendTest(key, slowId) };
    // A manual retry of the delivered message: its attempt counts too.
    await when(key, `/v1/webhooks/${deliveredId}/deliveries/${first}`, (message) => message.status === 'succeeded');
    expect((await client.call('POST', `/v1/webhooks/${deliveredId}/deliveries/${first}/retry`, { key })).status).toBe(202);
    delivered = { id: deliveredId, messageIds: [first] };
  });

  it("counts a webhook's succeeded attempts, a manual retry's among them, in the hour each was made", async () => {
    const stats = await when(key, `/v1/webhooks/${delivered.id}/stats`, (body) => body.totals.attempts === 2);
    const attempts = await attemptsOf(key, delivered.id, delivered.messageIds);
    expect(attempts).toHaveLength(2);
    expect(stats.totals).toMatchObject({ attempts: 2, succeeded: 2, pending: 0, failed: 0 });
    for (const [hour, latency] of expectedHours(attempts)) {
      const attemptsThen = Object.values(latency).reduce((sum, count) => sum + count, 0);
      expect(stats.hours.find((entry: { hour: number }) => entry.hour === hour)).toEqual({ hour, attempts: attemptsThen, succeeded: attemptsThen, pending: 0, failed: 0, latencyMs: latencyPercentiles(latency) });
    }
    expect(stats).not.toHaveProperty('lastFailure');
    expect(stats).not.toHaveProperty('deactivation');
    expect(stats.endpoint).toEqual({ status: 'healthy' });
  });

  it('counts a failed attempt that leaves its message pending, then the last one that fails it, with the last failure', async () => {
    const stats = await when(key, `/v1/webhooks/${failing.id}/stats`, (body) => body.totals.attempts === 2);
    const attempts = await attemptsOf(key, failing.id, [failing.messageId]);
    expect(stats.totals).toMatchObject({ attempts: 2, succeeded: 0, pending: 1, failed: 1 });
    expect(stats.lastFailure).toEqual({ at: attempts[1]!.attemptedAt, error: 'HTTP 500', statusCode: 500 });
    expect(stats.endpoint).toMatchObject({ status: 'failing', consecutiveFailures: 2 });
    // The last failed attempt deactivated the webhook: its statistics say so, with that attempt's error.
    expect(stats.deactivation).toEqual({ at: expect.any(Number), by: 'delivery', reason: 'a message failed its last attempt: HTTP 500' });
    expect(stats.deactivation.at).toBeGreaterThanOrEqual(attempts[1]!.attemptedAt);
    expect(await api.get(key, failing.id)).not.toHaveProperty('deactivation');
  });

  it("reports the attempts' latency from the histogram: the bound of each percentile's bucket", async () => {
    const stats = await when(key, `/v1/webhooks/${slowHook.id}/stats`, (body) => body.totals.attempts === 1);
    const [attempt] = await attemptsOf(key, slowHook.id, [slowHook.messageId]);
    const bound = Number(latencyBucketOf(attempt!.durationMs));
    expect(bound).toBeGreaterThanOrEqual(SLOW_MS);
    expect(stats.totals.latencyMs).toEqual({ p50: bound, p90: bound, p99: bound });
  });

  it('shows every hour of the window, oldest first, 24 by default, with the totals of all of them', async () => {
    const stats = await get(key, `/v1/webhooks/${delivered.id}/stats`);
    expect(stats.hours).toHaveLength(24);
    const starts = stats.hours.map((entry: { hour: number }) => entry.hour);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(stats.from).toBe(starts[0]);
    expect(stats.to).toBe(starts[23] + 3_600_000);
    expect(stats.hours.reduce((sum: number, entry: { attempts: number }) => sum + entry.attempts, 0)).toBe(stats.totals.attempts);
    expect((await get(key, `/v1/webhooks/${delivered.id}/stats?hours=720`)).hours).toHaveLength(720);
  });

  it("sums the account's attempts and lists its failing webhook with its last failure and endpoint", async () => {
    const stats = await when(key, '/v1/stats?hours=2', (body) => body.totals.attempts === 5);
    expect(stats.totals).toMatchObject({ attempts: 5, succeeded: 3, pending: 1, failed: 1 });
    expect(stats.hours).toHaveLength(2);
    const failingStats = await get(key, `/v1/webhooks/${failing.id}/stats`);
    // Its last failed attempt deactivated it (the hosted API's rule): it is listed as it is now.
    expect(stats.failingWebhooks).toEqual([
      { webhookId: failing.id, name: 'failing', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/hook$/), status: 'inactive', failedAttempts: 2, lastFailure: failingStats.lastFailure, endpoint: failingStats.endpoint },
    ]);
    expect(stats.webhooks).toEqual({ active: 2, inactive: 1 });
    expect(stats.inactiveWebhooks).toEqual([{ webhookId: failing.id, name: 'failing', url: stats.failingWebhooks[0].url, deactivation: failingStats.deactivation }]);
  });

  it("answers 404 for another account's webhook, and for one deleted", async () => {
    const other = await api.newAccountKey();
    expectError(await client.call('GET', `/v1/webhooks/${delivered.id}/stats`, { key: other }), 404);
    const gone = (await api.create(key, { url: 'https://gone.example.com/hook' })).id;
    expect((await client.call('DELETE', `/v1/webhooks/${gone}?permanent=true`, { key })).status).toBe(200);
    expectError(await client.call('GET', `/v1/webhooks/${gone}/stats`, { key }), 404);
    // Another account sees none of this one's attempts.
    expect((await get(other, '/v1/stats')).totals.attempts).toBe(0);
  });

  it.each(['0', '721', 'x', '1.5'])('answers 400 naming hours for hours=%p', async (hours) => {
    for (const path of [`/v1/webhooks/${delivered.id}/stats?hours=${hours}`, `/v1/stats?hours=${hours}`]) {
      const message = expectError(await client.call('GET', path, { key }), 400, 'hours');
      expect(message).toMatch(/1 to 720/);
    }
  });
});

describe("the account's webhooks by status, and why each inactive one is", () => {
  const API_REASON = 'deactivated through the API';
  let key: string;
  let active: string;
  let deleted: string;
  let patched: string;
  let gone: string;
  let startedAt: number;

  beforeAll(async () => {
    key = await api.newAccountKey();
    startedAt = Date.now();
    active = (await api.create(key, { url: 'https://active.example.com/hook', name: 'active' })).id;
    deleted = (await api.create(key, { url: 'https://deleted.example.com/hook', name: 'deleted' })).id;
    patched = (await api.create(key, { url: 'https://patched.example.com/hook', name: 'patched' })).id;
    const goneReceiver = await receiver({ status: 410 });
    gone = (await api.create(key, { url: goneReceiver.url, name: 'gone' })).id;
    expect((await client.call('DELETE', `/v1/webhooks/${deleted}`, { key })).status).toBe(200);
    expect((await api.patch(key, patched, { status: 'inactive' })).status).toBe(200);
    await api.sendTest(key, gone);
    await when(key, `/v1/webhooks/${gone}`, (webhook) => webhook.status === 'inactive');
  });

  it('counts the webhooks by status and lists the inactive ones, newest first, each with who deactivated it and why', async () => {
    const stats = await when(key, '/v1/stats', (body) => body.webhooks.inactive === 3);
    expect(stats.webhooks).toEqual({ active: 1, inactive: 3 });
    const byCaller = { at: expect.any(Number), by: 'caller', reason: API_REASON };
    expect(stats.inactiveWebhooks).toEqual([
      { webhookId: gone, name: 'gone', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/hook$/), deactivation: { at: expect.any(Number), by: 'delivery', reason: 'the receiver answered 410 Gone' } },
      { webhookId: patched, name: 'patched', url: 'https://patched.example.com/hook', deactivation: byCaller },
      { webhookId: deleted, name: 'deleted', url: 'https://deleted.example.com/hook', deactivation: byCaller },
    ]);
    for (const { deactivation } of stats.inactiveWebhooks) {
      expect(deactivation.at).toBeGreaterThanOrEqual(startedAt);
      expect(deactivation.at).toBeLessThanOrEqual(Date.now());
    }
  });

  it("shows the deactivation in the webhook's statistics while it is inactive, never in the Webhook API's shape", async () => {
    const { inactiveWebhooks } = await when(key, '/v1/stats', (body) => body.webhooks.inactive === 3);
    const listed = inactiveWebhooks.find((entry: { webhookId: string }) => entry.webhookId === gone);
    expect((await get(key, `/v1/webhooks/${gone}/stats`)).deactivation).toEqual(listed.deactivation);
    expect(await get(key, `/v1/webhooks/${active}/stats`)).not.toHaveProperty('deactivation');
    expect(await api.get(key, gone)).not.toHaveProperty('deactivation');
    const { webhooks } = await get(key, '/v1/webhooks?status=inactive');
    for (const webhook of webhooks) expect(webhook).not.toHaveProperty('deactivation');
  });

  it('keeps the first reason when an inactive webhook is deactivated again', async () => {
    const before = (await get(key, `/v1/webhooks/${gone}/stats`)).deactivation;
    expect((await client.call('DELETE', `/v1/webhooks/${gone}`, { key })).status).toBe(200);
    expect((await get(key, `/v1/webhooks/${gone}/stats`)).deactivation).toEqual(before);
    expect(before.by).toBe('delivery');
  });

  it('forgets the deactivation on activation, and keeps a new one when deactivated again', async () => {
    const first = (await get(key, `/v1/webhooks/${deleted}/stats`)).deactivation;
    expect((await api.patch(key, deleted, { status: 'active' })).status).toBe(200);
    expect(await get(key, `/v1/webhooks/${deleted}/stats`)).not.toHaveProperty('deactivation');
    const stats = await when(key, '/v1/stats', (body) => body.webhooks.inactive === 2);
    expect(stats.webhooks).toEqual({ active: 2, inactive: 2 });
    expect(stats.inactiveWebhooks.map((entry: { webhookId: string }) => entry.webhookId)).toEqual([gone, patched]);
    expect((await api.patch(key, deleted, { status: 'inactive', description: 'off again' })).status).toBe(200);
    const again = (await get(key, `/v1/webhooks/${deleted}/stats`)).deactivation;
    expect(again).toEqual({ at: expect.any(Number), by: 'caller', reason: API_REASON });
    expect(again.at).toBeGreaterThanOrEqual(first.at);
  });

  it('stops counting a webhook deleted for good once its addresses are purged', async () => {
    expect((await client.call('DELETE', `/v1/webhooks/${patched}?permanent=true`, { key })).status).toBe(200);
    const stats = await when(key, '/v1/stats', (body) => body.webhooks.inactive === 2 && body.webhooks.active === 1);
    expect(stats.inactiveWebhooks.map((entry: { webhookId: string }) => entry.webhookId)).toEqual([gone, deleted]);
  });
});
