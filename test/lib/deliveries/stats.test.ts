import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { mockClient } from 'aws-sdk-client-mock';
import { runtimeConfig, useRuntimeConfig } from '../../../lib/config/runtime';
import { MAX_FAILING_WEBHOOKS, MAX_INACTIVE_WEBHOOKS, statsQuery } from '../../../lib/schemas/stats';
import { DeliveryStatsBuffer, FAILING_WEBHOOKS_KEPT, FLUSH_AFTER_MS, hourOf, LATENCY_BUCKETS, latencyBucketOf, latencyPercentiles, type AttemptOutcome } from '../../../lib/deliveries/stats';
import { getAccountStats, getWebhookStats } from '../../../lib/deliveries/stats-report';
import { tableName } from '../../../lib/store/client';
import { deleteExpiredStats, HOUR_MS, queryAccountHours, queryWebhookHours } from '../../../lib/store/delivery-stats';
import { deleteItem, getItem } from '../../../lib/store/items';
import { accountUsageKey, webhookStatsHourKey } from '../../../lib/store/table';
import type { Attempt } from '../../../lib/store/messages';
import { createWebhook, deleteWebhook } from '../../../lib/webhooks/webhooks';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../../support/factories';

useEmbeddedStore({ DELIVERY_TIMEOUT_SECONDS: '10' });

const silent = new Logger({ logLevel: 'SILENT' });
/** A fixed clock: the start of the hour 5 hours ago (the attempts' times are given; the store keeps whatever hour it is told). */
const HOUR = hourOf(Date.now()) - 5 * HOUR_MS;

function attemptAt(attemptedAt: number, durationMs: number, failure?: { statusCode?: number; error: string }): Attempt {
  return { attemptedAt, trigger: 'scheduled', durationMs, ...(failure ?? { statusCode: 200 }) };
}

function counted(buffer: DeliveryStatsBuffer, account: string, webhookId: string, outcome: AttemptOutcome, attempt: Attempt, now = attempt.attemptedAt) {
  buffer.count({ account, webhookId, outcome, attempt }, now, silent);
}

describe('the latency histogram', () => {
  it('puts a duration in the first bucket whose bound holds it, and one over the last bound in the last', () => {
    expect(latencyBucketOf(0)).toBe('10');
    expect(latencyBucketOf(10)).toBe('10');
    expect(latencyBucketOf(11)).toBe('25');
    expect(latencyBucketOf(10_000)).toBe('10000');
    expect(latencyBucketOf(10_004)).toBe('inf');
  });

  it('reports each percentile as the bound of the bucket it falls in, the last bucket as the timeout', () => {
    // 50 fast, 45 at 250 ms, 4 at 2.5 s, 1 timed out: p50 in the first bucket, p90 in the second, p99 in the third.
    expect(latencyPercentiles({ '50': 50, '250': 45, '2500': 4, inf: 1 })).toEqual({ p50: 50, p90: 250, p99: 2500 });
    expect(latencyPercentiles({ '50': 1, '1000': 1 })).toEqual({ p50: 50, p90: 1000, p99: 1000 });
    expect(latencyPercentiles({ inf: 3 })).toEqual({ p50: 10_000, p90: 10_000, p99: 10_000 });
    expect(latencyPercentiles({})).toBeUndefined();
  });
});

describe('the statistics buffer', () => {
  it('writes nothing until flushed, then one item per webhook and hour and one per account and hour', async () => {
    const buffer = new DeliveryStatsBuffer();
    const account = randomAccount();
    counted(buffer, account, 'w1', 'succeeded', attemptAt(HOUR + 1_000, 40));
    counted(buffer, account, 'w1', 'succeeded', attemptAt(HOUR + 2_000, 300));
    counted(buffer, account, 'w1', 'pending', attemptAt(HOUR + 3_000, 20, { statusCode: 500, error: 'HTTP 500' }));
    counted(buffer, account, 'w2', 'failed', attemptAt(HOUR + 4_000, 10_010, { error: 'timeout after 10000 ms' }));
    expect(buffer.size).toBe(3);
    expect(await queryWebhookHours(account, 'w1', HOUR, HOUR)).toEqual([]);

    await buffer.flush(HOUR + 5_000, { all: true, log: silent });
    expect(buffer.size).toBe(0);
    expect(await queryWebhookHours(account, 'w1', HOUR, HOUR)).toEqual([
      {
        hour: HOUR,
        counts: { attempts: 3, succeeded: 2, pending: 1, failed: 0, latency: { '50': 1, '500': 1, '25': 1 } },
        lastFailure: { at: HOUR + 3_000, error: 'HTTP 500', statusCode: 500 },
      },
    ]);
    expect(await queryWebhookHours(account, 'w2', HOUR, HOUR)).toEqual([
      { hour: HOUR, counts: { attempts: 1, succeeded: 0, pending: 0, failed: 1, latency: { inf: 1 } }, lastFailure: { at: HOUR + 4_000, error: 'timeout after 10000 ms' } },
    ]);
    const [accountHour] = await queryAccountHours(account, HOUR, HOUR, LATENCY_BUCKETS);
    expect(accountHour).toEqual({ hour: HOUR, counts: { attempts: 4, succeeded: 2, pending: 1, failed: 1, latency: { '50': 1, '500': 1, '25': 1, inf: 1 } }, failingWebhooks: expect.any(Array) });
    expect(accountHour!.failingWebhooks.sort()).toEqual(['w1', 'w2']);
  });

  it('flushes, after a full batch, only the entries 10 s old and those whose hour has ended', async () => {
    const buffer = new DeliveryStatsBuffer();
    const account = randomAccount();
    const late = HOUR + HOUR_MS - 2_000;
    counted(buffer, account, 'old', 'succeeded', attemptAt(HOUR + 1_000, 5));
    counted(buffer, account, 'ending', 'succeeded', attemptAt(late, 5), late);
    counted(buffer, account, 'young', 'succeeded', attemptAt(HOUR + 1_000 + FLUSH_AFTER_MS - 1, 5));

    await buffer.flush(HOUR + 1_000 + FLUSH_AFTER_MS - 1, { log: silent });
    // Nothing is 10 s old yet, and the hour goes on.
    expect(buffer.size).toBe(4);
    await buffer.flush(HOUR + 1_000 + FLUSH_AFTER_MS, { log: silent });
    expect(await queryWebhookHours(account, 'old', HOUR, HOUR)).toHaveLength(1);
    expect(await queryWebhookHours(account, 'young', HOUR, HOUR)).toEqual([]);
    expect(await queryWebhookHours(account, 'ending', HOUR, HOUR)).toEqual([]);
    // The hour's end comes before the 10 s of the entry counted 2 s before it.
    await buffer.flush(HOUR + HOUR_MS, { log: silent });
    expect(await queryWebhookHours(account, 'ending', HOUR, HOUR)).toHaveLength(1);
    expect(await queryWebhookHours(account, 'young', HOUR, HOUR)).toHaveLength(1);
    expect(buffer.size).toBe(0);
  });

  it('counts an attempt in the hour it was made, either side of an hour boundary', async () => {
    const buffer = new DeliveryStatsBuffer();
    const account = randomAccount();
    const next = HOUR + HOUR_MS;
    counted(buffer, account, 'w', 'succeeded', attemptAt(next - 1, 5));
    counted(buffer, account, 'w', 'succeeded', attemptAt(next, 5));
    counted(buffer, account, 'w', 'succeeded', attemptAt(next + 1, 5));
    await buffer.flush(next + 2, { all: true, log: silent });
    const hours = await queryWebhookHours(account, 'w', HOUR, next);
    expect(hours.map(({ hour, counts }) => [hour, counts.attempts])).toEqual([
      [HOUR, 1],
      [next, 2],
    ]);
  });

  it('adds what several flushes write to one hour, and keeps its latest failure whatever the order', async () => {
    const [first, second] = [new DeliveryStatsBuffer(), new DeliveryStatsBuffer()];
    const account = randomAccount();
    counted(first, account, 'w', 'pending', attemptAt(HOUR + 9_000, 30, { statusCode: 503, error: 'HTTP 503' }));
    counted(second, account, 'w', 'pending', attemptAt(HOUR + 5_000, 30, { error: 'connection refused (ECONNREFUSED)' }));
    await first.flush(HOUR + 10_000, { all: true, log: silent });
    await second.flush(HOUR + 10_000, { all: true, log: silent });
    const [hour] = await queryWebhookHours(account, 'w', HOUR, HOUR);
    expect(hour).toEqual({ hour: HOUR, counts: { attempts: 2, succeeded: 0, pending: 2, failed: 0, latency: { '50': 2 } }, lastFailure: { at: HOUR + 9_000, error: 'HTTP 503', statusCode: 503 } });
  });

  it("keeps an hour's failing webhooks only while it holds fewer than it must keep, and counts every attempt", async () => {
    const account = randomAccount();
    const failedAt = (index: number) => attemptAt(HOUR + index, 30, { statusCode: 500, error: 'HTTP 500' });
    const flushFailing = async (ids: string[]) => {
      const buffer = new DeliveryStatsBuffer();
      ids.forEach((id, index) => counted(buffer, account, id, 'pending', failedAt(index)));
      await buffer.flush(HOUR + 10_000, { all: true, log: silent });
    };
    const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, index) => `${prefix}${index}`);
    const failingOf = async () => (await queryAccountHours(account, HOUR, HOUR, LATENCY_BUCKETS))[0]!;

    await flushFailing(ids('a', FAILING_WEBHOOKS_KEPT - 10));
    // Fewer than kept: added whole, past the bound.
    await flushFailing(ids('b', 20));
    expect((await failingOf()).failingWebhooks).toHaveLength(FAILING_WEBHOOKS_KEPT + 10);
    // As many as kept already: the counts are added, the webhooks are not.
    await flushFailing(ids('c', 5));
    const hour = await failingOf();
    expect(hour.failingWebhooks.sort()).toEqual([...ids('a', FAILING_WEBHOOKS_KEPT - 10), ...ids('b', 20)].sort());
    expect(hour.counts).toMatchObject({ attempts: FAILING_WEBHOOKS_KEPT + 15, pending: FAILING_WEBHOOKS_KEPT + 15 });
  });

  it('writes at most as many failing webhooks of an hour as it must keep, however many failed', async () => {
    const buffer = new DeliveryStatsBuffer();
    const account = randomAccount();
    for (let index = 0; index < 3 * FAILING_WEBHOOKS_KEPT; index += 1) counted(buffer, account, `w${index}`, 'failed', attemptAt(HOUR + index, 30, { error: 'HTTP 500', statusCode: 500 }));
    await buffer.flush(HOUR + 10_000, { all: true, log: silent });
    const [hour] = await queryAccountHours(account, HOUR, HOUR, LATENCY_BUCKETS);
    expect(hour!.failingWebhooks).toHaveLength(FAILING_WEBHOOKS_KEPT);
    expect(hour!.counts.failed).toBe(3 * FAILING_WEBHOOKS_KEPT);
  });

  it('writes an hour found holding as many failing webhooks as it keeps without them, until the hour ends', async () => {
    const buffer = new DeliveryStatsBuffer();
    const account = randomAccount();
    const failAll = (prefix: string, count: number, at: number) => {
      for (let index = 0; index < count; index += 1) counted(buffer, account, `${prefix}${index}`, 'pending', attemptAt(at + index, 30, { error: 'HTTP 500', statusCode: 500 }));
    };
    failAll('a', FAILING_WEBHOOKS_KEPT, HOUR);
    await buffer.flush(HOUR + 1_000, { all: true, log: silent });
    // Found full: counted once more with the webhooks refused, then known.
    failAll('b', 1, HOUR + 2_000);
    await buffer.flush(HOUR + 3_000, { all: true, log: silent });
    const accountWrites = async (at: number) => {
      failAll('c', 1, at);
      const dynamoDb = mockClient(DynamoDBClient);
      const sent: Array<{ UpdateExpression?: string; ConditionExpression?: string }> = [];
      dynamoDb.on(UpdateItemCommand).callsFake((input) => {
        sent.push(input);
        return {};
      });
      try {
        await buffer.flush(at + 1_000, { all: true, log: silent });
      } finally {
        dynamoDb.restore();
      }
      return sent.filter(({ UpdateExpression }) => !UpdateExpression!.includes('lastFailure'));
    };
    const known = await accountWrites(HOUR + 4_000);
    expect(known).toHaveLength(1);
    expect(known[0]!.UpdateExpression).not.toContain('failingWebhooks');
    expect(known[0]!.ConditionExpression).toBeUndefined();
    // A new hour's set is tried again.
    const next = await accountWrites(HOUR + HOUR_MS);
    expect(next.map(({ UpdateExpression }) => UpdateExpression)).toEqual([expect.stringContaining('failingWebhooks')]);
  });

  it('keeps the counts of a flush whose writes fail, and writes them once at the next', async () => {
    const buffer = new DeliveryStatsBuffer();
    const account = randomAccount();
    counted(buffer, account, 'w', 'succeeded', attemptAt(HOUR + 1_000, 5));
    const dynamoDb = mockClient(DynamoDBClient);
    dynamoDb.on(UpdateItemCommand).rejects(new Error('ProvisionedThroughputExceededException'));
    try {
      await expect(buffer.flush(HOUR + 2_000, { all: true, log: silent })).resolves.toBeUndefined();
    } finally {
      dynamoDb.restore();
    }
    expect(buffer.size).toBe(2);
    counted(buffer, account, 'w', 'succeeded', attemptAt(HOUR + 3_000, 5));
    await buffer.flush(HOUR + 4_000, { all: true, log: silent });
    expect(buffer.size).toBe(0);
    expect((await queryWebhookHours(account, 'w', HOUR, HOUR))[0]!.counts.attempts).toBe(2);
    expect((await queryAccountHours(account, HOUR, HOUR, LATENCY_BUCKETS))[0]!.counts.attempts).toBe(2);
  });

  it('drops the oldest entries past its bound while writes fail', async () => {
    const buffer = new DeliveryStatsBuffer(10);
    const account = randomAccount();
    const dynamoDb = mockClient(DynamoDBClient);
    dynamoDb.on(UpdateItemCommand).rejects(new Error('unavailable'));
    try {
      // Each webhook is an entry, and the account's hour one more.
      for (let index = 0; index < 12; index += 1) counted(buffer, account, `w${index}`, 'succeeded', attemptAt(HOUR + index, 5));
      await buffer.flush(HOUR + 100, { all: true, log: silent });
    } finally {
      dynamoDb.restore();
    }
    expect(buffer.size).toBeLessThanOrEqual(10);
    await buffer.flush(HOUR + 200, { all: true, log: silent });
    expect(await queryWebhookHours(account, 'w11', HOUR, HOUR)).toHaveLength(1);
    expect(await queryWebhookHours(account, 'w0', HOUR, HOUR)).toEqual([]);
  });

  it('gives each item the retention, and the local expiry sweep deletes it once past', async () => {
    const buffer = new DeliveryStatsBuffer();
    const account = randomAccount();
    counted(buffer, account, 'w', 'succeeded', attemptAt(HOUR + 1_000, 5));
    await buffer.flush(HOUR + 2_000, { all: true, log: silent });
    const item = await getItem({ TableName: tableName(), Key: webhookStatsHourKey(account, 'w', HOUR) });
    expect(item!.expiresAt).toBe((HOUR + HOUR_MS) / 1000 + 30 * 86_400);
    await deleteExpiredStats(item!.expiresAt * 1000 - 1_000, Date.now() + 5_000);
    expect(await queryWebhookHours(account, 'w', HOUR, HOUR)).toHaveLength(1);
    await deleteExpiredStats(item!.expiresAt * 1000, Date.now() + 5_000);
    expect(await queryWebhookHours(account, 'w', HOUR, HOUR)).toEqual([]);
    expect(await queryAccountHours(account, HOUR, HOUR, LATENCY_BUCKETS)).toEqual([]);
  });
});

describe('the statistics read', () => {
  const newWebhook = async (account: string, name: string) =>
    (await createWebhook(account, webhookInput({ name, url: `https://${name}.example.com/hook`, metadata: { addresses: [randomAddress()] } }) as never)).id;

  it("fills every hour of a webhook's window, oldest first, with its totals and last failure", async () => {
    const account = randomAccount();
    const id = await newWebhook(account, 'one');
    const buffer = new DeliveryStatsBuffer();
    counted(buffer, account, id, 'succeeded', attemptAt(HOUR - 2 * HOUR_MS, 40));
    counted(buffer, account, id, 'failed', attemptAt(HOUR + 10, 700, { statusCode: 410, error: 'HTTP 410' }));
    counted(buffer, account, id, 'succeeded', attemptAt(HOUR - 30 * HOUR_MS, 40)); // outside the window
    await buffer.flush(HOUR + 20, { all: true, log: silent });

    const stats = await getWebhookStats(account, id, { hours: 4 }, HOUR + 1_000);
    expect(stats.from).toBe(HOUR - 3 * HOUR_MS);
    expect(stats.to).toBe(HOUR + HOUR_MS);
    expect(stats.hours.map(({ hour, attempts }) => [hour - HOUR, attempts])).toEqual([
      [-3 * HOUR_MS, 0],
      [-2 * HOUR_MS, 1],
      [-HOUR_MS, 0],
      [0, 1],
    ]);
    expect(stats.hours[0]).not.toHaveProperty('latencyMs');
    expect(stats.totals).toEqual({ attempts: 2, succeeded: 1, pending: 0, failed: 1, latencyMs: { p50: 50, p90: 1000, p99: 1000 } });
    expect(stats.lastFailure).toEqual({ at: HOUR + 10, error: 'HTTP 410', statusCode: 410 });
    expect(stats.endpoint).toEqual({ status: 'healthy' });
  });

  it("lists the account's failing webhooks, the most recent failure first, leaving out a deleted one", async () => {
    const account = randomAccount();
    const [early, late, deleted, fine] = [await newWebhook(account, 'early'), await newWebhook(account, 'late'), await newWebhook(account, 'gone'), await newWebhook(account, 'fine')];
    const buffer = new DeliveryStatsBuffer();
    counted(buffer, account, early, 'pending', attemptAt(HOUR - HOUR_MS, 40, { error: 'HTTP 500', statusCode: 500 }));
    counted(buffer, account, early, 'failed', attemptAt(HOUR - HOUR_MS + 5, 40, { error: 'HTTP 500', statusCode: 500 }));
    counted(buffer, account, late, 'pending', attemptAt(HOUR + 50, 40, { error: 'timeout after 10000 ms' }));
    counted(buffer, account, deleted, 'pending', attemptAt(HOUR + 60, 40, { error: 'HTTP 502', statusCode: 502 }));
    counted(buffer, account, fine, 'succeeded', attemptAt(HOUR + 70, 40));
    await buffer.flush(HOUR + 100, { all: true, log: silent });
    await deleteWebhook(account, deleted, { permanent: true });

    const stats = await getAccountStats(account, { hours: 2 }, HOUR + 1_000);
    expect(stats.totals).toMatchObject({ attempts: 5, succeeded: 1, pending: 3, failed: 1 });
    expect(stats.failingWebhooks).toEqual([
      { webhookId: late, name: 'late', url: 'https://late.example.com/hook', status: 'active', failedAttempts: 1, lastFailure: { at: HOUR + 50, error: 'timeout after 10000 ms' }, endpoint: { status: 'healthy' } },
      {
        webhookId: early,
        name: 'early',
        url: 'https://early.example.com/hook',
        status: 'active',
        failedAttempts: 2,
        lastFailure: { at: HOUR - HOUR_MS + 5, error: 'HTTP 500', statusCode: 500 },
        endpoint: { status: 'healthy' },
      },
    ]);
    // A window that ends before the late failures sees only the early one.
    const earlier = await getAccountStats(account, { hours: 1 }, HOUR - 1);
    expect(earlier.failingWebhooks.map(({ webhookId }) => webhookId)).toEqual([early]);
  });

  it('lists, of an hour with more failing webhooks than it keeps, the most recent failures of those it kept', async () => {
    const account = randomAccount();
    const ids: string[] = [];
    for (let index = 0; index < FAILING_WEBHOOKS_KEPT + 10; index += 1) ids.push(await newWebhook(account, `w${index}`));
    const buffer = new DeliveryStatsBuffer();
    ids.forEach((id, index) => counted(buffer, account, id, 'pending', attemptAt(HOUR + index, 40, { error: 'HTTP 500', statusCode: 500 })));
    await buffer.flush(HOUR + 1_000, { all: true, log: silent });

    const stats = await getAccountStats(account, { hours: 1 }, HOUR + 1_000);
    // The hour kept the first FAILING_WEBHOOKS_KEPT to fail; of those, the MAX_FAILING_WEBHOOKS that failed last.
    expect(stats.failingWebhooks.map(({ webhookId }) => webhookId)).toEqual(ids.slice(FAILING_WEBHOOKS_KEPT - MAX_FAILING_WEBHOOKS, FAILING_WEBHOOKS_KEPT).reverse());
    expect(stats.totals.pending).toBe(FAILING_WEBHOOKS_KEPT + 10);
  });

  it('counts the inactive webhooks beyond those it lists, and lists the newest of them', async () => {
    const account = randomAccount();
    const inactive: string[] = [];
    for (let index = 0; index < MAX_INACTIVE_WEBHOOKS + 3; index += 1) inactive.push(await newWebhook(account, `off${index}`));
    await newWebhook(account, 'on');
    for (const id of inactive) await deleteWebhook(account, id, { permanent: false });

    const stats = await getAccountStats(account, { hours: 1 });
    expect(stats.webhooks).toEqual({ active: 1, inactive: MAX_INACTIVE_WEBHOOKS + 3 });
    expect(stats.inactiveWebhooks.map(({ webhookId }) => webhookId)).toEqual([...inactive].reverse().slice(0, MAX_INACTIVE_WEBHOOKS));
    expect(stats.inactiveWebhooks[0]).toEqual({
      webhookId: inactive[inactive.length - 1],
      name: `off${MAX_INACTIVE_WEBHOOKS + 2}`,
      url: `https://off${MAX_INACTIVE_WEBHOOKS + 2}.example.com/hook`,
      deactivation: { at: expect.any(Number), by: 'caller', reason: 'deactivated through the API' },
    });
  });

  it('counts the active webhooks in the status index when the account has no usage item (made before usage was kept)', async () => {
    const account = randomAccount();
    const [, , off] = [await newWebhook(account, 'a'), await newWebhook(account, 'b'), await newWebhook(account, 'c')];
    await deleteWebhook(account, off!, { permanent: false });
    await deleteItem({ TableName: tableName(), Key: accountUsageKey(account) });

    expect((await getAccountStats(account, { hours: 1 })).webhooks).toEqual({ active: 2, inactive: 1 });
  });
});

describe('the window asked for', () => {
  it("reaches back at most the delivery log's retention, in whole hours, and 24 hours by default", () => {
    const config = runtimeConfig();
    try {
      useRuntimeConfig({ ...config, delivery: { ...config.delivery, retentionDays: 2.5 } });
      expect(statsQuery.parse({ hours: '60' })).toEqual({ hours: 60 });
      expect(statsQuery.parse({})).toEqual({ hours: 24 });
      for (const hours of ['61', '0', '1.5', '-1', '99999999999']) {
        const refused = statsQuery.safeParse({ hours });
        expect(refused.error?.issues.map(({ message }) => message)).toEqual(['must be a whole number of hours from 1 to 60']);
      }
    } finally {
      useRuntimeConfig(config);
    }
  });
});
