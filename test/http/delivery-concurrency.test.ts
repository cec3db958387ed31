import { useLocalService } from '../support/local-service';
import { startReceiver, type Receiver } from '../support/receiver';
import { webhooksApi } from './support/webhooks-api';

const PER_HOST = 3;

// Declared before the service: hooks run in the order declared, so the dead receivers drop their
// hanging attempts before the service stops, which waits for the attempts under way (8 s each) otherwise.
let dead: Receiver;
let deadElsewhere: Receiver;
let healthy: Receiver;
beforeAll(async () => {
  dead = await startReceiver(() => 'hang');
  deadElsewhere = await startReceiver(() => 'hang');
  healthy = await startReceiver();
});
afterAll(async () => {
  await Promise.all([dead.close(), deadElsewhere.close(), healthy.close()]);
});

// 40 test notifications a webhook in a few seconds: over the default limit a minute (docs/limits.md).
const client = useLocalService({
  DELIVERY_TIMEOUT_SECONDS: '8',
  DELIVERY_RETRY_SCHEDULE: '1',
  MAX_TEST_NOTIFICATIONS_PER_MINUTE: '100',
  DELIVERY_CONCURRENCY_PER_ACCOUNT: '6',
  DELIVERY_CONCURRENCY_PER_HOST: String(PER_HOST),
});
const api = webhooksApi(client);

async function sendTests(key: string, id: string, count: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    expect((await client.call('POST', `/v1/webhooks/${id}/test`, { key })).status).toBe(202);
  }
}

it("a receiver that never answers holds only its account's slots at its address, whatever the port, and does not delay another account", async () => {
  const key = await api.newAccountKey();
  const stuck = (await api.create(key, { url: dead.url })).id as string;
  // Another port of the same address: the same host slots, not as many again.
  const stuckElsewhere = (await api.create(key, { url: deadElsewhere.url })).id as string;
  await sendTests(key, stuck, 20);
  await sendTests(key, stuckElsewhere, 20);
  await Promise.race([dead.waitFor(PER_HOST), deadElsewhere.waitFor(PER_HOST)]).catch(() => undefined);
  while (dead.requests.length + deadElsewhere.requests.length < PER_HOST) await new Promise((resolve) => setTimeout(resolve, 50));

  const otherKey = await api.newAccountKey();
  const fine = (await api.create(otherKey, { url: healthy.url })).id as string;
  await sendTests(otherKey, fine, 5);
  await healthy.waitFor(5);
  // Every attempt to the dead receivers is still under way (their timeout is 8 s): the other
  // account's messages did not wait for them, and no more than the host's limit were opened.
  expect(dead.requests.length + deadElsewhere.requests.length).toBe(PER_HOST);
  const stuckLog = await client.call('GET', `/v1/webhooks/${stuck}/deliveries?pageSize=100`, { key });
  expect(stuckLog.body.deliveries).toHaveLength(20);
  expect(stuckLog.body.deliveries.every((entry: { attempts: number }) => entry.attempts === 0)).toBe(true);
  expect(stuckLog.body.endpoint).toEqual({ status: 'healthy' });
});
