import { stageSettings } from '../../lib/config/stages';
import { useLocalService } from '../support/local-service';
import { startReceiver, type Receiver } from '../support/receiver';
import { webhooksApi } from './support/webhooks-api';

/**
 * Issue 48's stall: account A warms origins with test notifications that are answered fast, makes
 * them hang, and sends a wave of retries at each; account B's test notifications meanwhile must
 * arrive within the issue's loose bound.
 */
const ORIGINS = 4;
const WARMING = 40;
const WAVE = 40;
const B_NOTIFICATIONS = 5;
const B_BOUND_MS = 2_000;
const ATTEMPT_TIMEOUT_MS = stageSettings('local').delivery.attemptTimeoutSeconds * 1000;

let hanging = false;
const origins: Receiver[] = [];
let bReceiver: Receiver;
beforeAll(async () => {
  for (let index = 0; index < ORIGINS; index += 1) origins.push(await startReceiver(() => (hanging ? 'hang' : { status: 200 })));
  bReceiver = await startReceiver();
});
// Declared before the service: the hanging attempts are dropped before the service waits for them.
afterAll(async () => {
  await Promise.all([...origins, bReceiver].map((receiver) => receiver.close()));
});

const client = useLocalService({
  MAX_TEST_NOTIFICATIONS_PER_MINUTE: '1000',
  MAX_TEST_NOTIFICATIONS_PER_MINUTE_PER_ACCOUNT: '1000',
  MAX_RECOVERS_PER_MINUTE: '1000',
  MAX_RECOVERS_PER_MINUTE_PER_ACCOUNT: '1000',
  MAX_RETRIES_PER_MINUTE: '1000',
  MAX_RETRIES_PER_MINUTE_PER_ACCOUNT: '1000',
});
const api = webhooksApi(client);

async function sendTest(key: string, id: string): Promise<string> {
  const response = await client.call('POST', `/v1/webhooks/${id}/test`, { key });
  expect(response.status).toBe(202);
  return response.body.messageId as string;
}

it("one account's hanging receivers, warmed as fast first, do not delay another account's notifications", async () => {
  const a = await api.newAccountKey();
  const warmed: Array<{ id: string; messages: string[] }> = [];
  for (const origin of origins) {
    const id = (await api.create(a, { url: origin.url })).id as string;
    const messages: string[] = [];
    for (let index = 0; index < WARMING; index += 1) messages.push(await sendTest(a, id));
    warmed.push({ id, messages });
  }
  await Promise.all(origins.map((origin) => origin.waitFor(WARMING)));
  // Every warming attempt is recorded before the receivers start to hang.
  await new Promise((resolve) => setTimeout(resolve, 500));
  hanging = true;
  const hangingSince = Date.now();

  const b = await api.newAccountKey();
  const bWebhook = (await api.create(b, { url: bReceiver.url })).id as string;
  const delays: number[] = [];
  for (const { id, messages } of warmed) {
    await Promise.all(messages.slice(0, WAVE).map((messageId) => client.call('POST', `/v1/webhooks/${id}/deliveries/${messageId}/retry`, { key: a })));
    for (let index = 0; index < B_NOTIFICATIONS; index += 1) {
      const before = bReceiver.requests.length;
      const sentAt = Date.now();
      await sendTest(b, bWebhook);
      const [arrived] = (await bReceiver.waitFor(before + 1, 20_000)).slice(before);
      delays.push(arrived!.at - sentAt);
    }
  }
  expect(Math.max(...delays)).toBeLessThan(B_BOUND_MS);
  // A's attempts under way at once (each hangs until its timeout, 10 s) were no more than the slots of their host (one address, four ports).
  const beforeAnyTimedOut = origins.flatMap(({ requests }) => requests.slice(WARMING)).filter(({ at }) => at < hangingSince + ATTEMPT_TIMEOUT_MS);
  expect(beforeAnyTimedOut.length).toBeLessThanOrEqual(stageSettings('local').delivery.concurrency.perHost);
}, 120_000);
