import { useLocalService } from '../support/local-service';
import { startReceiver, type Receiver } from '../support/receiver';
import { webhooksApi } from './support/webhooks-api';

const PER_HOST = 16;
// 40 test notifications a webhook in a few seconds: over the default limit a minute (docs/limits.md).
const client = useLocalService({ DELIVERY_TIMEOUT_SECONDS: '5', DELIVERY_RETRY_SCHEDULE: '1', MAX_TEST_NOTIFICATIONS_PER_MINUTE: '100' });
const api = webhooksApi(client);

let dead: Receiver;
let healthy: Receiver;
beforeAll(async () => {
  dead = await startReceiver(() => 'hang');
  healthy = await startReceiver();
});
afterAll(async () => {
  await Promise.all([dead.close(), healthy.close()]);
});

async function webhookTo(url: string) {
  const key = await api.newAccountKey();
  const { id } = await api.create(key, { url });
  return { key, id: id as string };
}

async function sendTests(key: string, id: string, count: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    expect((await client.call('POST', `/v1/webhooks/${id}/test`, { key })).status).toBe(202);
  }
}

it('a receiver that never answers uses only its own slots and does not delay a healthy one', async () => {
  const stuck = await webhookTo(dead.url);
  const fine = await webhookTo(healthy.url);
  await sendTests(stuck.key, stuck.id, 40);
  await dead.waitFor(PER_HOST);
  await sendTests(fine.key, fine.id, 5);
  await healthy.waitFor(5);
  // Every one of the dead receiver's attempts is still under way (its timeout is 5 s): the healthy
  // receiver's messages did not wait for them, and no more than its per-host limit were opened.
  const stuckLog = await client.call('GET', `/v1/webhooks/${stuck.id}/deliveries?pageSize=100`, { key: stuck.key });
  expect(stuckLog.body.deliveries).toHaveLength(40);
  expect(stuckLog.body.deliveries.every((entry: { attempts: number }) => entry.attempts === 0)).toBe(true);
  expect(dead.requests).toHaveLength(PER_HOST);
});
