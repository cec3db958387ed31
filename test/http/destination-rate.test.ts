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
  for (const { key, webhooks } of accounts) {
    for (let index = 0; index < webhooks; index += 1) {
      const { id } = await api.create(key, { url: victim.url });
      for (let test = 0; test < TESTS_EACH; test += 1) sends.push(async () => expect((await client.call('POST', `/v1/webhooks/${id}/test`, { key })).status).toBe(202));
    }
  }
  await Promise.all(sends.map((send) => send()));
  await victim.waitFor(TOTAL, 60_000);
  // Counted in the fixed seconds they are admitted in, each sent a moment later (under a second, however
  // loaded this machine is): a second-long window of arrivals holds at most three seconds' admissions, and the run as a whole the rate.
  const arrivals = victim.requests.map(({ at }) => at).sort((a, b) => a - b);
  const inAnySecond = Math.max(...arrivals.map((at) => arrivals.filter((other) => other >= at && other < at + 1000).length));
  expect(inAnySecond).toBeLessThanOrEqual(3 * RATE);
  const seconds = (arrivals.at(-1)! - arrivals[0]!) / 1000;
  expect((TOTAL - 2 * RATE) / seconds).toBeLessThanOrEqual(RATE);
  process.stdout.write(`destination rate: most in a second ${inAnySecond}, ${(TOTAL / seconds).toFixed(1)}/s over ${seconds.toFixed(1)} s\n`);
  expect(victim.requests).toHaveLength(TOTAL);
  expect(new Set(victim.requests.map(({ body }) => JSON.parse(body).messageId)).size).toBe(TOTAL);
}, 90_000);
