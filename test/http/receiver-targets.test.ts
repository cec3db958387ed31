import { runtimeConfig } from '../../lib/config/runtime';
import { webhookInput } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { startReceiver, type Receiver } from '../support/receiver';
import { expectError, UUID_PATTERN } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

// Nothing here sends anywhere but to the test's receiver: refused targets are only validated. A name
// resolving to one of the service's own ports is refused when sent to: test/lib/deliveries/send.test.ts.

let receiver: Receiver;
const env: Record<string, string> = { DELIVERY_RETRY_SCHEDULE: '', DELIVERY_TIMEOUT_SECONDS: '2' };
beforeAll(async () => {
  receiver = await startReceiver();
  // The operator's narrowing: the receiver's port is the only other loopback port allowed.
  env.LOOPBACK_TARGET_PORTS = receiverPort();
});
afterAll(() => receiver.close());

const client = useLocalService(env);
const api = webhooksApi(client);

const receiverPort = () => new URL(receiver.url).port;
const apiPort = () => new URL(client.url()).port;
// DynamoDB Local's, in the cross-check (docs/testing.md).
const storePort = () => new URL(runtimeConfig().dynamoDbEndpoint!).port;
const ownPortReason = (port: string) => `loopback address 127.0.0.1 port ${port}, one of the service's own ports`;

const refusedTargets: Array<[string, () => string, () => string]> = [
  ['the instance metadata service', () => 'https://169.254.169.254/latest/meta-data/', () => 'link-local address 169.254.169.254'],
  ['a private address', () => 'https://10.0.0.1/hook', () => 'private address 10.0.0.1'],
  ['a private address mapped into IPv6', () => 'https://[::ffff:10.0.0.1]/hook', () => 'private address 10.0.0.1 (in ::ffff:a00:1)'],
  ['a unique local IPv6 address', () => 'https://[fd00::1]:8443/hook', () => 'unique local address fd00::1'],
  ["the store's own port", () => `http://127.0.0.1:${storePort()}/`, () => ownPortReason(storePort())],
  ["the API's own port", () => `http://127.0.0.1:${apiPort()}/v1/webhooks`, () => ownPortReason(apiPort())],
  ["the store's own port over IPv6 loopback", () => `http://[::1]:${storePort()}/`, () => `loopback address ::1 port ${storePort()}, one of the service's own ports`],
  ['a loopback port outside LOOPBACK_TARGET_PORTS', () => 'http://127.0.0.1:1/hook', () => `loopback address 127.0.0.1 port 1, not one of the loopback ports allowed (${receiverPort()})`],
  // localhost is loopback by definition: its port is vetted at create, like a literal's.
  ["the store's own port as localhost", () => `http://localhost:${storePort()}/`, () => `localhost port ${storePort()}, one of the service's own ports`],
  ["the API's own port as localhost over https", () => `https://localhost:${apiPort()}/`, () => `localhost port ${apiPort()}, one of the service's own ports`],
  ['localhost on a port outside LOOPBACK_TARGET_PORTS', () => 'http://localhost:1/hook', () => `localhost port 1, not one of the loopback ports allowed (${receiverPort()})`],
];

describe('a target that can never be allowed', () => {
  it.each(refusedTargets)('answers 400 naming url at create, for %s, and creates nothing', async (_, url, reason) => {
    const key = await api.newAccountKey();
    const message = expectError(await client.call('POST', '/v1/webhooks', { key, body: webhookInput({ url: url() }) }), 400, 'url');
    expect(message).toBe(`Invalid body field url: must point at a public address or an allowed loopback port, not ${reason()}`);
    expect(await api.listAllIds(key)).toEqual([]);
  });

  it.each(refusedTargets)('answers 400 naming url at update, for %s, and leaves the webhook unchanged', async (_, url, reason) => {
    const key = await api.newAccountKey();
    const original = await api.create(key, { url: receiver.url });
    const message = expectError(await api.patch(key, original.id, { url: url() }), 400, 'url');
    expect(message).toContain(reason());
    expect(await api.get(key, original.id)).toEqual(original);
  });
});

it('delivers to a loopback port that LOOPBACK_TARGET_PORTS allows', async () => {
  const key = await api.newAccountKey();
  const webhook = await api.create(key, { url: receiver.url });
  const sent = await client.call('POST', `/v1/webhooks/${webhook.id}/test`, { key });
  expect(sent.body.messageId).toMatch(UUID_PATTERN);
  const entry = await deliveryWhen(key, webhook.id, sent.body.messageId, (delivery) => delivery.status !== 'pending');
  expect(entry.status).toBe('succeeded');
  expect(receiver.requests.map((request) => JSON.parse(request.body).messageId)).toContain(sent.body.messageId);
});

async function deliveryWhen(key: string, id: string, messageId: string, done: (entry: any) => boolean) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const response = await client.call('GET', `/v1/webhooks/${id}/deliveries/${messageId}`, { key });
    expect(response.status).toBe(200);
    if (done(response.body)) return response.body;
    if (Date.now() > deadline) throw new Error(`message ${messageId} never reached the expected state: ${JSON.stringify(response.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
