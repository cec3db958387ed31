import { getAccountUsage } from '../../lib/store/account-usage';
import { randomAccount } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { startReceiver, type Receiver } from '../support/receiver';
import { addressesApi, addressesPath, randomAddresses } from './support/addresses-api';
import { expectError } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

const client = useLocalService({
  MAX_WEBHOOKS_PER_ACCOUNT: '4',
  MAX_ADDRESSES_PER_ACCOUNT: '20',
  MAX_TEST_NOTIFICATIONS_PER_MINUTE: '3',
  MAX_RECOVERS_PER_MINUTE: '2',
  MAX_TEST_NOTIFICATIONS_PER_MINUTE_PER_ACCOUNT: '5',
  MAX_RETRIES_PER_MINUTE: '2',
  MAX_RETRIES_PER_MINUTE_PER_ACCOUNT: '3',
});
const api = webhooksApi(client);
const addresses = addressesApi(client);

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver(() => ({ status: 200 }));
});
afterAll(async () => {
  await receiver.close();
});

const createCall = (key: string, watched = randomAddresses(1)) =>
  client.call('POST', '/v1/webhooks', {
    key,
    body: { url: 'https://receiver.example.com/hooks', chainId: '43114', eventType: 'address_activity', metadata: { addresses: watched } },
  });

async function listedIds(key: string): Promise<string[]> {
  return (await api.pageThrough(key)).flatMap((page) => page.ids);
}

describe('webhooks per account (MAX_WEBHOOKS_PER_ACCOUNT=4)', () => {
  it('answers a fifth create with 400 naming the limit, inactive webhooks counted', async () => {
    const key = await api.newAccountKey();
    const ids = await api.createMany(key, 4);
    expect((await api.call('DELETE', `/v1/webhooks/${ids[0]}`, { key })).status).toBe(200);
    const message = expectError(await createCall(key), 400);
    expect(message).toContain('its limit is 4 webhooks per account');
    expect((await listedIds(key)).sort()).toEqual([...ids].sort());
  });

  it('creates exactly 4 of 10 concurrent creates', async () => {
    const key = await api.newAccountKey();
    const responses = await Promise.all(Array.from({ length: 10 }, () => createCall(key)));
    expect(responses.filter((response) => response.status === 201)).toHaveLength(4);
    for (const refused of responses.filter((response) => response.status !== 201)) expect(expectError(refused, 400)).toContain('4 webhooks per account');
    expect(await listedIds(key)).toHaveLength(4);
  });

  it('frees a slot when a webhook deleted for good has had its addresses purged', async () => {
    const account = randomAccount();
    const key = await api.keyFor(account);
    const ids = await api.createMany(key, 4);
    expectError(await createCall(key), 400);
    expect((await api.call('DELETE', `/v1/webhooks/${ids[2]}?permanent=true`, { key })).status).toBe(200);
    expect(expectError(await createCall(key), 400)).toContain('its slot is freed once its addresses are purged');
    await purged(account, ids[2]!);
    expect((await createCall(key)).status).toBe(201);
    expectError(await createCall(key), 400);
  });
});

describe('addresses per account (MAX_ADDRESSES_PER_ACCOUNT=20)', () => {
  it('answers an add that would take two webhooks together over 20 with 400 naming the limit, and adds none of it', async () => {
    const account = randomAccount();
    const key = await api.keyFor(account);
    const first = (await api.create(key, { metadata: { addresses: randomAddresses(12) } })).id;
    const second = (await api.create(key, { metadata: { addresses: randomAddresses(5) } })).id;
    const attempted = randomAddresses(4);
    const message = expectError(await addresses.add(key, second, attempted), 400, 'addresses');
    expect(message).toContain('21 addresses in all, over its limit of 20 addresses per account');
    expect(await addresses.total(key, second)).toBe(5);
    await addresses.added(key, second, attempted.slice(0, 3));
    expectError(await addresses.add(key, first, randomAddresses(1)), 400, 'addresses');
    // Room again once a webhook deleted for good has had its addresses purged.
    expect((await api.call('DELETE', `/v1/webhooks/${first}?permanent=true`, { key })).status).toBe(200);
    expectError(await addresses.add(key, second, randomAddresses(12)), 400, 'addresses');
    await purged(account, first);
    await addresses.added(key, second, randomAddresses(12));
    expect(await addresses.total(key, second)).toBe(20);
  });

  it('answers a create whose addresses do not fit with 400 naming metadata.addresses', async () => {
    const key = await api.newAccountKey();
    await api.create(key, { metadata: { addresses: randomAddresses(15) } });
    expect(expectError(await createCall(key, randomAddresses(6)), 400, 'metadata.addresses')).toContain('20 addresses per account');
    expect(await listedIds(key)).toHaveLength(1);
  });

  it('lets concurrent adds to two webhooks fill the account to 20 and no further', async () => {
    const key = await api.newAccountKey();
    const first = (await api.create(key, { metadata: { addresses: randomAddresses(1) } })).id;
    const second = (await api.create(key, { metadata: { addresses: randomAddresses(1) } })).id;
    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, index) => client.call('PATCH', addressesPath(index % 2 ? first : second), { key, body: { addresses: randomAddresses(3) } })),
    );
    expect(responses.filter((response) => response.status === 200)).toHaveLength(6);
    expect((await addresses.total(key, first)) + (await addresses.total(key, second))).toBe(20);
  });
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits for the service's background maintenance to purge the webhook deleted for good and stop counting it. */
async function purged(account: string, webhookId: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while ((await getAccountUsage(account))?.webhooks[webhookId]) {
    if (Date.now() > deadline) throw new Error(`webhook ${webhookId} was not purged within 15 s`);
    await sleep(200);
  }
}

describe('calls per webhook per minute', () => {
  it('answers a fourth test notification in a minute with 429 and Retry-After, naming the limit', async () => {
    const key = await api.newAccountKey();
    const { id } = await api.create(key, { url: receiver.url });
    for (let call = 0; call < 3; call += 1) expect((await client.call('POST', `/v1/webhooks/${id}/test`, { key })).status).toBe(202);
    const refused = await client.call('POST', `/v1/webhooks/${id}/test`, { key });
    const message = expectError(refused, 429);
    const retryAfter = refused.headers.get('retry-after');
    expect(retryAfter).toMatch(/^[1-9]\d*$/);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    expect(message).toBe(`Too many test notifications for webhook ${id}: at most 3 per minute; try again in ${retryAfter} s`);
  });

  it('answers a third recover in a minute with 429 and Retry-After, naming the limit', async () => {
    const key = await api.newAccountKey();
    const { id } = await api.create(key, { url: receiver.url });
    for (let call = 0; call < 2; call += 1) expect((await client.call('POST', `/v1/webhooks/${id}/recover`, { key, body: { since: 0 } })).status).toBe(202);
    const refused = await client.call('POST', `/v1/webhooks/${id}/recover`, { key, body: { since: 0 } });
    expect(expectError(refused, 429)).toContain(`Too many recover calls for webhook ${id}: at most 2 per minute`);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
  });
});

/** A webhook with one delivered test notification, to retry. */
async function deliveredMessage(key: string): Promise<{ id: string; messageId: string }> {
  const { id } = await api.create(key, { url: receiver.url });
  const sent = await client.call('POST', `/v1/webhooks/${id}/test`, { key });
  expect(sent.status).toBe(202);
  const messageId = sent.body.messageId as string;
  while ((await client.call('GET', `/v1/webhooks/${id}/deliveries/${messageId}`, { key })).body.status !== 'succeeded') await new Promise((resolve) => setTimeout(resolve, 50));
  return { id, messageId };
}

/** Retries the message once; a 409 (its last retry's attempt still under way) is counted as a retry too. */
async function retry(key: string, { id, messageId }: { id: string; messageId: string }) {
  const response = await client.call('POST', `/v1/webhooks/${id}/deliveries/${messageId}/retry`, { key });
  if (response.status !== 429) expect([202, 409]).toContain(response.status);
  return response;
}

describe('retries per minute (MAX_RETRIES_PER_MINUTE=2, MAX_RETRIES_PER_MINUTE_PER_ACCOUNT=3)', () => {
  it("answers a webhook's third retry in a minute with 429 and Retry-After, naming the limit", async () => {
    const key = await api.newAccountKey();
    const message = await deliveredMessage(key);
    for (let call = 0; call < 2; call += 1) expect((await retry(key, message)).status).not.toBe(429);
    const refused = await retry(key, message);
    expect(expectError(refused, 429)).toContain(`Too many retries for webhook ${message.id}: at most 2 per minute`);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
  });

  it("answers the account's fourth retry in a minute, over two webhooks, with 429 naming the account's limit", async () => {
    const key = await api.newAccountKey();
    const [one, two] = [await deliveredMessage(key), await deliveredMessage(key)];
    for (const message of [one, one, two]) expect((await retry(key, message)).status).not.toBe(429);
    expect(expectError(await retry(key, two), 429)).toContain('Too many retries for this account: at most 3 per minute for all its webhooks together');
  });
});

describe('calls per account per minute (MAX_TEST_NOTIFICATIONS_PER_MINUTE_PER_ACCOUNT=5)', () => {
  it('counts test notifications across a webhook deleted for good and a new one, and answers the sixth with 429 naming the limit', async () => {
    const key = await api.newAccountKey();
    const first = (await api.create(key, { url: receiver.url })).id;
    for (let call = 0; call < 3; call += 1) expect((await client.call('POST', `/v1/webhooks/${first}/test`, { key })).status).toBe(202);
    expect((await api.call('DELETE', `/v1/webhooks/${first}?permanent=true`, { key })).status).toBe(200);
    const second = (await api.create(key, { url: receiver.url })).id;
    for (let call = 0; call < 2; call += 1) expect((await client.call('POST', `/v1/webhooks/${second}/test`, { key })).status).toBe(202);
    const refused = await client.call('POST', `/v1/webhooks/${second}/test`, { key });
    const retryAfter = refused.headers.get('retry-after');
    expect(retryAfter).toMatch(/^[1-9]\d*$/);
    expect(expectError(refused, 429)).toBe(
      `Too many test notifications for this account: at most 5 per minute for all its webhooks together; try again in ${retryAfter} s`,
    );
  });
});
