import { useLocalService } from '../support/local-service';
import { startReceiver, type Receiver } from '../support/receiver';
import { webhooksApi } from './support/webhooks-api';

/**
 * Issue 48's victim: webhooks of two accounts pointing at one receiver that is nobody's (and one
 * account's fan-out of a notification to many webhooks with the same URL): the receiver gets at most
 * the destination's rate a second, and every notification in the end, none dropped.
 */
const RATE = 5;
const A_WEBHOOKS = 10;
const B_WEBHOOKS = 5;
const TESTS_EACH = 3;
const TOTAL = (A_WEBHOOKS + B_WEBHOOKS) * TESTS_EACH;

let victim: Receiver;
beforeAll(async () => {
  victim = await startReceiver();
});
afterAll(async () => {
  await victim.close();
});

const client = useLocalService({
  DELIVERY_DESTINATION_RATE_PER_SECOND: String(RATE),
  // Put-offs come back after a quarter of the timeout, doubled each time: a short one keeps the test short.
  DELIVERY_TIMEOUT_SECONDS: '2',
  MAX_TEST_NOTIFICATIONS_PER_MINUTE: '100',
  MAX_TEST_NOTIFICATIONS_PER_MINUTE_PER_ACCOUNT: '1000',
});
const api = webhooksApi(client);

it(`gives one receiver at most ${RATE} attempts a second across every account and webhook pointing at it, and every notification in the end`, async () => {
  const accounts = [
    { key: await api.newAccountKey(), webhooks: A_WEBHOOKS },
    { key: await api.newAccountKey(), webhooks: B_WEBHOOKS },
  ];
  const sends: Array<() => Promise<unknown>> = [];
  const created: Array<{ key: string; ids: string[] }> = [];
  for (const { key, webhooks } of accounts) {
    const ids: string[] = [];
    created.push({ key, ids });
    for (let index = 0; index < webhooks; index += 1) {
      const { id } = await api.create(key, { url: victim.url });
      ids.push(id);
      for (let test = 0; test < TESTS_EACH; test += 1) sends.push(async () => expect((await client.call('POST', `/v1/webhooks/${id}/test`, { key })).status).toBe(202));
    }
  }
  await Promise.all(sends.map((send) => send()));
  await victim.waitFor(TOTAL, 60_000);
  // The attempts' start times, from the delivery log: each a few milliseconds after its admission, which
  // counted it in that second's rate, so an attempt admitted at a second's end may start in the next.
  const started: number[] = [];
  for (const { key, ids } of created) {
    for (const id of ids) {
      const log = await client.call('GET', `/v1/webhooks/${id}/deliveries?pageSize=100`, { key });
      started.push(...log.body.deliveries.map(({ lastAttemptAt }: { lastAttemptAt: number }) => lastAttemptAt));
    }
  }
  const perSecond = new Map<number, number>();
  for (const at of started) perSecond.set(Math.floor(at / 1000), (perSecond.get(Math.floor(at / 1000)) ?? 0) + 1);
  const most = Math.max(...perSecond.values());
  const seconds = (Math.max(...started) - Math.min(...started)) / 1000;
  process.stdout.write(`destination rate: most started in a second ${most}, ${(TOTAL / seconds).toFixed(1)}/s over ${seconds.toFixed(1)} s\n`);
  expect(started).toHaveLength(TOTAL);
  expect(most).toBeLessThanOrEqual(RATE + 2);
  expect((TOTAL - RATE) / seconds).toBeLessThanOrEqual(RATE);
  expect(victim.requests).toHaveLength(TOTAL);
  expect(new Set(victim.requests.map(({ body }) => JSON.parse(body).messageId)).size).toBe(TOTAL);
}, 90_000);
