import type { APIGatewayProxyResult, Context } from 'aws-lambda';
import { handler as addAddressesHandler } from '../../functions/add-addresses-to-webhook';
import { handler as createHandler } from '../../functions/create-webhook';
import { handler as deleteHandler } from '../../functions/delete-webhook';
import { handler as listAddressesHandler } from '../../functions/get-addresses-from-webhook';
import { handler as listHandler } from '../../functions/list-webhooks';
import { handler as recoverHandler } from '../../functions/recover-failed-deliveries';
import { handler as removeAddressesHandler } from '../../functions/remove-addresses-from-webhook';
import { handler as sendTestHandler } from '../../functions/send-test-notification';
import { handler as updateHandler } from '../../functions/update-webhook';
import { changeWrites } from '../../lib/addresses/address-changes';
import { runAddressMaintenance } from '../../lib/addresses/maintenance';
import { ConfigurationError, readRuntimeConfig } from '../../lib/config/runtime';
import { stageSettings } from '../../lib/config/stages';
import { countAddressChange } from '../../lib/limits/account-limits';
import { addWebhookUsage, getAccountUsage, removeWebhookUsage } from '../../lib/store/account-usage';
import { writeItems } from '../../lib/store/batch';
import { acquireAddressLease, getWebhookAddressState, putAddressChange, type AddressChange } from '../../lib/store/addresses';
import { tableName } from '../../lib/store/client';
import { deleteItem, getItem } from '../../lib/store/items';
import { accountUsageKey, webhookKey } from '../../lib/store/table';
import { deterministicUuid } from '../../lib/uuid';
import { useEmbeddedStore } from '../support/embedded-store';
import { apiEvent, randomAccount, randomAddress, webhookInput } from '../support/factories';

useEmbeddedStore({
  MAX_WEBHOOKS_PER_ACCOUNT: '3',
  MAX_ADDRESSES_PER_ACCOUNT: '10',
  MAX_TEST_NOTIFICATIONS_PER_MINUTE: '2',
  MAX_RECOVERS_PER_MINUTE: '1',
  MAX_TEST_NOTIFICATIONS_PER_MINUTE_PER_ACCOUNT: '3',
  MAX_RECOVERS_PER_MINUTE_PER_ACCOUNT: '2',
  LEASE_SECONDS: '1',
});
const context = {} as Context;

const json = (response: APIGatewayProxyResult) => JSON.parse(response.body);
const randomAddresses = (count: number) => Array.from({ length: count }, randomAddress);

const create = (account: string, addresses = [randomAddress()]) =>
  createHandler(apiEvent({ account, method: 'POST', body: webhookInput({ metadata: { addresses } }) }), context);

async function created(account: string, addresses = [randomAddress()]): Promise<string> {
  const response = await create(account, addresses);
  expect(response.statusCode).toBe(201);
  return json(response).id;
}

const deletePermanently = (account: string, id: string) =>
  deleteHandler(apiEvent({ account, method: 'DELETE', pathParameters: { id }, query: { permanent: 'true' } }), context);
const addAddresses = (account: string, id: string, addresses: string[]) =>
  addAddressesHandler(apiEvent({ account, method: 'PATCH', pathParameters: { id }, body: { addresses } }), context);
const removeAddresses = (account: string, id: string, addresses: string[]) =>
  removeAddressesHandler(apiEvent({ account, method: 'DELETE', pathParameters: { id }, body: { addresses } }), context);
const sendTest = (account: string, id: string) => sendTestHandler(apiEvent({ account, method: 'POST', pathParameters: { id } }), context);
const recover = (account: string, id: string) =>
  recoverHandler(apiEvent({ account, method: 'POST', pathParameters: { id }, body: { since: 0 } }), context);
const listedIds = async (account: string) =>
  (json(await listHandler(apiEvent({ account, query: { pageSize: '100' } }), context)).webhooks as { id: string }[]).map(({ id }) => id);

function expectRefusal(response: APIGatewayProxyResult, status: number, ...parts: string[]): void {
  expect(response.statusCode).toBe(status);
  const body = json(response);
  expect(body).toEqual({ message: expect.any(String), statusCode: status, error: status === 400 ? 'Bad Request' : 'Too Many Requests' });
  for (const part of parts) expect(body.message).toContain(part);
}

describe('webhooks per account (MAX_WEBHOOKS_PER_ACCOUNT=3)', () => {
  it('refuses a fourth webhook with 400 naming the limit, counting inactive webhooks too', async () => {
    const account = randomAccount();
    const ids = [await created(account), await created(account), await created(account)];
    const deactivated = await deleteHandler(apiEvent({ account, method: 'DELETE', pathParameters: { id: ids[0]! } }), context);
    expect(json(deactivated).status).toBe('inactive');
    expectRefusal(await create(account), 400, '3 webhooks per account', 'permanent=true');
    expect((await listedIds(account)).sort()).toEqual([...ids].sort());
  });

  it('frees a slot when a webhook deleted for good has its addresses purged, and only then', async () => {
    const account = randomAccount();
    const ids = [await created(account), await created(account), await created(account)];
    expect((await updateHandler(apiEvent({ account, method: 'PATCH', pathParameters: { id: ids[1]! }, body: { status: 'inactive' } }), context)).statusCode).toBe(200);
    expectRefusal(await create(account), 400, '3 webhooks per account');
    expect((await deletePermanently(account, ids[1]!)).statusCode).toBe(200);
    // Its addresses wait for the purge: a loop of create and delete would pile them up if the slot were free already.
    expectRefusal(await create(account), 400, '3 webhooks per account', 'its slot is freed once its addresses are purged');
    await purged(account, ids[1]!);
    await created(account);
    expectRefusal(await create(account), 400, '3 webhooks per account');
  });

  it('refuses an address change that would count again a webhook whose count was dropped, when the account has its limit of webhooks', async () => {
    const account = randomAccount();
    const [dropped] = [await created(account), await created(account), await created(account)];
    const usage = (await getAccountUsage(account))!;
    expect(await removeWebhookUsage(account, dropped!, usage.webhooks[dropped!]!)).toBe(true);
    await created(account);
    expectRefusal(await addAddresses(account, dropped!, randomAddresses(1)), 400, '3 webhooks per account');
    expect(await getAccountUsage(account)).toMatchObject({ webhookCount: 3 });
  });

  it('lets 8 concurrent creates in one account make exactly 3 webhooks', async () => {
    const account = randomAccount();
    const responses = await Promise.all(Array.from({ length: 8 }, () => create(account)));
    const statuses = responses.map((response) => response.statusCode).sort();
    expect(statuses).toEqual([201, 201, 201, 400, 400, 400, 400, 400]);
    expect(await listedIds(account)).toHaveLength(3);
    expect(await getAccountUsage(account)).toMatchObject({ webhookCount: 3, addressCount: 3 });
  });

  it('counts the webhooks an account had before its usage was kept', async () => {
    const account = randomAccount();
    await created(account);
    await created(account);
    // As if they predated the usage item: it is made anew from the webhooks.
    await deleteItem({ TableName: tableName(), Key: accountUsageKey(account) });
    await created(account);
    expectRefusal(await create(account), 400, '3 webhooks per account');
  });

  it('drops the count of a webhook whose creation was cut off long ago when it would refuse a creation', async () => {
    const account = randomAccount();
    const [first] = [await created(account), await created(account), await created(account)];
    expect((await deletePermanently(account, first!)).statusCode).toBe(200);
    await purged(account, first!);
    // A slot taken 20 minutes ago by a creation that never wrote its webhook.
    const cutOff = deterministicUuid(Date.now() - 20 * 60_000, [account]);
    expect(await addWebhookUsage(account, cutOff, { addresses: 1, change: '' }, {})).toBe(true);
    await created(account);
    const usage = (await getAccountUsage(account))!;
    expect(usage.webhooks[cutOff]).toBeUndefined();
    expect(usage).toMatchObject({ webhookCount: 3, addressCount: 3 });
  });
});

describe('addresses per account (MAX_ADDRESSES_PER_ACCOUNT=10)', () => {
  it('refuses an add that would take the account over 10 across two webhooks, adding nothing', async () => {
    const account = randomAccount();
    const first = await created(account, randomAddresses(6));
    const second = await created(account, randomAddresses(3));
    const refused = await addAddresses(account, second, randomAddresses(2));
    expectRefusal(refused, 400, 'addresses', '11 addresses', '10 addresses per account');
    expect(json(await addAddresses(account, second, randomAddresses(1))).id).toBe(second);
    expectRefusal(await addAddresses(account, first, randomAddresses(1)), 400, '10 addresses per account');
    expect(await getAccountUsage(account)).toMatchObject({ addressCount: 10 });
  });

  it('refuses a create whose addresses do not fit, and gives room back on a remove and a permanent delete', async () => {
    const account = randomAccount();
    const watched = randomAddresses(8);
    const first = await created(account, watched);
    expectRefusal(await create(account, randomAddresses(3)), 400, 'metadata.addresses', '10 addresses per account');
    expect(await listedIds(account)).toEqual([first]);
    expect((await removeAddresses(account, first, watched.slice(0, 1))).statusCode).toBe(200);
    const second = await created(account, randomAddresses(3));
    expectRefusal(await addAddresses(account, second, randomAddresses(1)), 400, '10 addresses per account');
    expect((await deletePermanently(account, first)).statusCode).toBe(200);
    expectRefusal(await addAddresses(account, second, randomAddresses(7)), 400, '10 addresses per account');
    await purged(account, first);
    expect((await addAddresses(account, second, randomAddresses(7))).statusCode).toBe(200);
    expect(await getAccountUsage(account)).toMatchObject({ webhookCount: 1, addressCount: 10 });
  });

  it('counts a change cut off after it was counted once when it is completed', async () => {
    const account = randomAccount();
    const id = await created(account, randomAddresses(2));
    const change = await cutOffChange(account, id, randomAddresses(2));
    expect(await countAddressChange(change, 2)).toBeUndefined();
    // The next change completes it (and counts it no second time), then makes its own.
    expect((await addAddresses(account, id, randomAddresses(1))).statusCode).toBe(200);
    expect(await getAccountUsage(account)).toMatchObject({ addressCount: 5 });
    expect((await addAddresses(account, id, randomAddresses(5))).statusCode).toBe(200);
    expectRefusal(await addAddresses(account, id, randomAddresses(1)), 400, '10 addresses per account');
  });

  it('drops a change cut off before it was counted when the account has no room for it any more', async () => {
    const account = randomAccount();
    const id = await created(account, randomAddresses(2));
    const change = await cutOffChange(account, id, randomAddresses(5));
    await created(account, randomAddresses(7));
    await waitForLease(account, id);
    expect((await runAddressMaintenance(Date.now() + 10_000)).changesCompleted).toBe(1);
    const listed = json(await listHandler(apiEvent({ account, query: { pageSize: '10' } }), context)).webhooks;
    expect(listed.find((webhook: { id: string }) => webhook.id === id).metadata.addresses).not.toContain(change.addresses[0]);
    expect(await getAccountUsage(account)).toMatchObject({ addressCount: 9 });
  });

  it('completes a change that was counted and began writing when its webhook lost its count, however full the account is', async () => {
    const account = randomAccount();
    const id = await created(account, randomAddresses(2));
    const change = await cutOffChange(account, id, randomAddresses(5));
    expect(await countAddressChange(change, 2)).toBeUndefined();
    const [firstWrites] = changeWrites(change);
    await writeItems(firstWrites!.slice(0, 2)); // two of its address items, then the holder stopped
    const usage = (await getAccountUsage(account))!;
    expect(await removeWebhookUsage(account, id, usage.webhooks[id]!)).toBe(true);
    await created(account, randomAddresses(7));
    await waitForLease(account, id);
    expect((await runAddressMaintenance(Date.now() + 10_000)).changesCompleted).toBe(1);
    const page = json(await listAddressesHandler(apiEvent({ account, pathParameters: { id }, query: { pageSize: '100' } }), context));
    expect(page.totalAddresses).toBe(7);
    expect(page.addresses).toEqual(expect.arrayContaining(change.addresses));
    expect((await getAccountUsage(account))!.webhooks[id]).toEqual({ addresses: 7, change: change.id });
  });
});

/** Runs the background maintenance until the webhook deleted for good is purged and no longer counted. */
async function purged(account: string, webhookId: string): Promise<void> {
  for (let pass = 0; (await getAccountUsage(account))!.webhooks[webhookId]; pass += 1) {
    if (pass === 50) throw new Error(`webhook ${webhookId} was not purged in 50 passes`);
    await runAddressMaintenance(Date.now() + 10_000);
    await sleep(100);
  }
}

/** An add recorded by a holder of the webhook's lease that stopped there (its lease expires after LEASE_SECONDS). */
async function cutOffChange(account: string, webhookId: string, addresses: string[]): Promise<AddressChange> {
  const now = Date.now();
  const leaseId = crypto.randomUUID();
  expect(await acquireAddressLease(account, webhookId, leaseId, now, now + 1000)).toHaveProperty('acquired');
  const change: AddressChange = { id: leaseId, account, webhookId, chainId: '43114', kind: 'add', addresses, delta: addresses.length, startedAt: now - 60_000 };
  await putAddressChange(change);
  return change;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForLease(account: string, webhookId: string): Promise<void> {
  while (((await getWebhookAddressState(account, webhookId))!.lease?.expiresAt ?? 0) >= Date.now()) await sleep(100);
}

describe('calls per webhook per minute', () => {
  it('answers a third test notification in a minute with 429, Retry-After and the limit; another webhook is not held back', async () => {
    const account = randomAccount();
    const id = await created(account);
    const other = await created(account);
    expect((await sendTest(account, id)).statusCode).toBe(202);
    expect((await sendTest(account, id)).statusCode).toBe(202);
    const refused = await sendTest(account, id);
    expectRefusal(refused, 429, `Too many test notifications for webhook ${id}: at most 2 per minute; try again in`);
    const retryAfter = Number(refused.headers!['Retry-After']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(json(refused).message).toContain(`try again in ${retryAfter} s`);
    expect((await sendTest(account, other)).statusCode).toBe(202);
  });

  it('lets only 2 of 6 concurrent test notifications through', async () => {
    const account = randomAccount();
    const id = await created(account);
    const statuses = (await Promise.all(Array.from({ length: 6 }, () => sendTest(account, id)))).map((response) => response.statusCode);
    expect(statuses.sort()).toEqual([202, 202, 429, 429, 429, 429]);
  });

  it('answers a second recover in a minute with 429 naming recover calls', async () => {
    const account = randomAccount();
    const id = await created(account);
    expect((await recover(account, id)).statusCode).toBe(202);
    const refused = await recover(account, id);
    expectRefusal(refused, 429, `Too many recover calls for webhook ${id}: at most 1 per minute`);
    expect(refused.headers!['Retry-After']).toMatch(/^\d+$/);
  });
});

describe('calls per account per minute (3 test notifications, 2 recover calls)', () => {
  it('counts test notifications across webhooks deleted for good and created again', async () => {
    const account = randomAccount();
    const first = await created(account);
    expect((await sendTest(account, first)).statusCode).toBe(202);
    expect((await sendTest(account, first)).statusCode).toBe(202);
    expect((await deletePermanently(account, first)).statusCode).toBe(200);
    const second = await created(account);
    expect((await sendTest(account, second)).statusCode).toBe(202);
    const refused = await sendTest(account, second);
    expectRefusal(refused, 429, 'Too many test notifications for this account: at most 3 per minute for all its webhooks together; try again in');
    expect(json(refused).message).toContain(`try again in ${refused.headers!['Retry-After']} s`);
    // The refused call is not counted in the webhook's own window.
    expect((await getItem({ TableName: tableName(), Key: webhookKey(account, second), ConsistentRead: true }))!.testNotificationWindow.count).toBe(1);
  });

  it('lets only 3 of 8 concurrent test notifications to three webhooks through', async () => {
    const account = randomAccount();
    const ids = [await created(account), await created(account), await created(account)];
    const statuses = await Promise.all(Array.from({ length: 8 }, (_, index) => sendTest(account, ids[index % 3]!)));
    expect(statuses.map((response) => response.statusCode).sort()).toEqual([202, 202, 202, 429, 429, 429, 429, 429]);
  });

  it('answers a third recover call to three webhooks with 429 naming the account limit', async () => {
    const account = randomAccount();
    const ids = [await created(account), await created(account), await created(account)];
    expect((await recover(account, ids[0]!)).statusCode).toBe(202);
    expect((await recover(account, ids[1]!)).statusCode).toBe(202);
    expectRefusal(await recover(account, ids[2]!), 429, 'Too many recover calls for this account: at most 2 per minute');
  });
});

describe('settings', () => {
  it('takes the stage defaults, each overridden by its environment variable', () => {
    expect(readRuntimeConfig({ STAGE: 'prod' }).accountLimits).toEqual({
      webhooksPerAccount: 1000,
      addressesPerAccount: 5_000_000,
      testNotificationsPerMinute: 10,
      recoversPerMinute: 5,
      testNotificationsPerMinutePerAccount: 60,
      recoversPerMinutePerAccount: 30,
      retriesPerMinute: 30,
      retriesPerMinutePerAccount: 120,
      apiKeysPerAccount: 20,
      apiKeyCreationsPerMinute: 10,
    });
    expect(readRuntimeConfig({ MAX_RETRIES_PER_MINUTE: '9' }).accountLimits.retriesPerMinute).toBe(9);
    expect(readRuntimeConfig({ MAX_RETRIES_PER_MINUTE_PER_ACCOUNT: '90' }).accountLimits.retriesPerMinutePerAccount).toBe(90);
    expect(readRuntimeConfig({ STAGE: 'prod' }).delivery.destinationRatePerSecond).toBe(1000);
    expect(readRuntimeConfig({ DELIVERY_DESTINATION_RATE_PER_SECOND: '5' }).delivery.destinationRatePerSecond).toBe(5);
    expect(readRuntimeConfig({ MAX_RECOVERS_PER_MINUTE: '7' }).accountLimits.recoversPerMinute).toBe(7);
    expect(readRuntimeConfig({ MAX_API_KEY_CREATIONS_PER_MINUTE: '3' }).accountLimits.apiKeyCreationsPerMinute).toBe(3);
    expect(readRuntimeConfig({ MAX_TEST_NOTIFICATIONS_PER_MINUTE_PER_ACCOUNT: '70' }).accountLimits.testNotificationsPerMinutePerAccount).toBe(70);
    expect(readRuntimeConfig({ MAX_RECOVERS_PER_MINUTE_PER_ACCOUNT: '40' }).accountLimits.recoversPerMinutePerAccount).toBe(40);
  });

  it('refuses more than 3000 webhooks per account, which the usage item could not hold', () => {
    expect(() => readRuntimeConfig({ MAX_WEBHOOKS_PER_ACCOUNT: '3001' })).toThrow(ConfigurationError);
    expect(() => readRuntimeConfig({ MAX_WEBHOOKS_PER_ACCOUNT: '3001' })).toThrow('MAX_WEBHOOKS_PER_ACCOUNT must be at most 3000');
    const local = stageSettings('local');
    const stage = { ...local, accountLimits: { ...local.accountLimits, webhooksPerAccount: 3001 } };
    expect(() => readRuntimeConfig({}, stage)).toThrow("the stage's accountLimits.webhooksPerAccount must be at most 3000, got 3001");
    expect(readRuntimeConfig({ MAX_WEBHOOKS_PER_ACCOUNT: '3000' }, stage).accountLimits.webhooksPerAccount).toBe(3000);
    expect(() => readRuntimeConfig({ MAX_TEST_NOTIFICATIONS_PER_MINUTE: '0' })).toThrow('MAX_TEST_NOTIFICATIONS_PER_MINUTE must be a positive number');
  });
});
