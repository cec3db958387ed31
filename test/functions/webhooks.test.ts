import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { handler as createHandler } from '../../functions/create-webhook';
import { handler as deleteHandler } from '../../functions/delete-webhook';
import { handler as getHandler } from '../../functions/get-webhook';
import { handler as listHandler } from '../../functions/list-webhooks';
import { handler as updateHandler } from '../../functions/update-webhook';
import { INVALID_API_KEY_MESSAGE } from '../../lib/errors';
import { useEmbeddedStore } from '../support/embedded-store';
import { apiEvent, randomAccount, randomAddress, randomEventSignature, webhookInput } from '../support/factories';

useEmbeddedStore();
const context = {} as Context;

const SPEC_FIELDS = [
  'id', 'url', 'chainId', 'status', 'createdAt', 'name', 'description',
  'eventType', 'metadata', 'includeInternalTxs', 'includeLogs',
];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A well-formed id that no webhook has. */
const unusedId = () => '0190a000-0000-7000-8000-' + Math.floor(Math.random() * 1e12).toString(16).padStart(12, '0');

interface Webhook {
  id: string;
  status: string;
  [field: string]: unknown;
}

const json = (response: APIGatewayProxyResult) => JSON.parse(response.body);

async function create(account: string, overrides: Record<string, unknown> = {}) {
  return createHandler(apiEvent({ account, method: 'POST', body: webhookInput(overrides) }), context);
}

async function createdWebhook(account: string, overrides: Record<string, unknown> = {}): Promise<Webhook> {
  const response = await create(account, overrides);
  expect(response.statusCode).toBe(201);
  return json(response);
}

/** Webhooks created one after another, so their order is the creation order. */
async function createdWebhooks(account: string, count: number): Promise<Webhook[]> {
  const webhooks: Webhook[] = [];
  for (let index = 0; index < count; index += 1) webhooks.push(await createdWebhook(account, { name: `hook ${index}` }));
  return webhooks;
}

const get = (account: string, id: string) => getHandler(apiEvent({ account, pathParameters: { id } }), context);
const patch = (account: string, id: string, body: unknown) =>
  updateHandler(apiEvent({ account, method: 'PATCH', pathParameters: { id }, body }), context);
const remove = (account: string, id: string, query: Record<string, string> = {}) =>
  deleteHandler(apiEvent({ account, method: 'DELETE', pathParameters: { id }, query }), context);
const list = (account: string, query: Record<string, string> = {}) => listHandler(apiEvent({ account, query }), context);

/** Every page of a listing, following nextPageToken. */
async function allPages(account: string, query: Record<string, string> = {}) {
  const pages: { webhooks: Webhook[]; nextPageToken?: string }[] = [];
  let pageToken: string | undefined;
  do {
    const response = await list(account, { ...query, ...(pageToken ? { pageToken } : {}) });
    expect(response.statusCode).toBe(200);
    pages.push(json(response));
    pageToken = pages.at(-1)!.nextPageToken;
  } while (pageToken && pages.length < 100);
  return pages;
}

const idsOf = (webhooks: Webhook[]) => webhooks.map((webhook) => webhook.id);
const listedIds = async (account: string, query: Record<string, string> = {}) =>
  (await allPages(account, query)).flatMap((page) => idsOf(page.webhooks));

/** A 404 body with the id taken out, to compare the answers for two different ids. */
const notFoundShape = (response: APIGatewayProxyResult, id: string) => ({
  statusCode: response.statusCode,
  body: { ...json(response), message: json(response).message.replace(id, '<id>') },
});

describe('create webhook', () => {
  it('answers 201 with every spec field and the defaults', async () => {
    const before = Date.now();
    const input = webhookInput();
    const response = await createHandler(apiEvent({ account: randomAccount(), method: 'POST', body: input }), context);
    const after = Date.now();
    expect(response.statusCode).toBe(201);
    expect(response.headers?.['Content-Type']).toBe('application/json');
    const body = json(response);
    expect(Object.keys(body).sort()).toEqual([...SPEC_FIELDS].sort());
    expect(body).toEqual({
      id: expect.stringMatching(UUID),
      url: input.url,
      chainId: input.chainId,
      status: 'active',
      createdAt: expect.any(Number),
      name: '',
      description: '',
      eventType: 'address_activity',
      metadata: { eventSignatures: [], addresses: (input.metadata as { addresses: string[] }).addresses },
      includeInternalTxs: false,
      includeLogs: false,
    });
    expect(Number.isInteger(body.createdAt)).toBe(true);
    expect(body.createdAt).toBeGreaterThanOrEqual(before);
    expect(body.createdAt).toBeLessThanOrEqual(after);
  });

  it('stores the normalised metadata: addresses and signatures lower-cased and de-duplicated', async () => {
    const address = randomAddress();
    const signature = randomEventSignature();
    const webhook = await createdWebhook(randomAccount(), {
      metadata: { addresses: [`0x${address.slice(2).toUpperCase()}`, address], eventSignatures: [signature, signature] },
    });
    expect(webhook.metadata).toEqual({ eventSignatures: [signature], addresses: [address] });
  });

  it('gives each webhook its own id', async () => {
    const account = randomAccount();
    const [first, second] = await Promise.all([createdWebhook(account), createdWebhook(account)]);
    expect(first!.id).not.toBe(second!.id);
  });

  it('answers 400 naming the field for an invalid body, and stores nothing', async () => {
    const account = randomAccount();
    const response = await create(account, { url: 'http://receiver.example.com/' });
    expect(response.statusCode).toBe(400);
    expect(json(response)).toMatchObject({ statusCode: 400, error: 'Bad Request', message: expect.stringContaining('url') });
    expect(json(await list(account))).toEqual({ webhooks: [] });
  });
});

describe('get webhook', () => {
  it('answers 200 with the webhook as created', async () => {
    const account = randomAccount();
    const webhook = await createdWebhook(account, { name: 'mine', includeLogs: true });
    const response = await get(account, webhook.id);
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual(webhook);
  });

  it('answers 404 for an id that does not exist', async () => {
    const id = unusedId();
    const response = await get(randomAccount(), id);
    expect(response.statusCode).toBe(404);
    expect(json(response)).toMatchObject({ statusCode: 404, error: 'Not Found' });
  });

  it("answers another account's id with the same 404 as an id that does not exist", async () => {
    const webhook = await createdWebhook(randomAccount());
    const caller = randomAccount();
    const missingId = unusedId();
    expect(notFoundShape(await get(caller, webhook.id), webhook.id)).toEqual(notFoundShape(await get(caller, missingId), missingId));
    expect((await get(caller, webhook.id)).body).not.toContain(String(webhook.url));
  });

  it('answers 400 naming the id for an id that is not a UUID', async () => {
    const response = await get(randomAccount(), 'not-a-uuid');
    expect(response.statusCode).toBe(400);
    expect(json(response).message).toContain('id');
  });
});

describe('update webhook', () => {
  it('answers 200 with the changed webhook, other fields kept, and get shows the change', async () => {
    const account = randomAccount();
    const webhook = await createdWebhook(account, { name: 'before', description: 'kept' });
    const response = await patch(account, webhook.id, { name: 'after', includeInternalTxs: true });
    expect(response.statusCode).toBe(200);
    const expected = { ...webhook, name: 'after', includeInternalTxs: true };
    expect(json(response)).toEqual(expected);
    expect(json(await get(account, webhook.id))).toEqual(expected);
  });

  it('changes the event signatures and keeps the addresses', async () => {
    const account = randomAccount();
    const addresses = [randomAddress()];
    const webhook = await createdWebhook(account, { metadata: { addresses, eventSignatures: [randomEventSignature()] } });
    const signature = randomEventSignature();
    const updated = json(await patch(account, webhook.id, { metadata: { eventSignatures: [signature] } }));
    expect(updated.metadata).toEqual({ eventSignatures: [signature], addresses });
  });

  it("answers 404 for another account's id and leaves that webhook unchanged", async () => {
    const owner = randomAccount();
    const webhook = await createdWebhook(owner);
    const caller = randomAccount();
    const missingId = unusedId();
    const response = await patch(caller, webhook.id, { name: 'taken over' });
    expect(notFoundShape(response, webhook.id)).toEqual(notFoundShape(await patch(caller, missingId, { name: 'x' }), missingId));
    expect(response.statusCode).toBe(404);
    expect(json(await get(owner, webhook.id))).toEqual(webhook);
  });

  it('does not create a webhook when patching an id that does not exist', async () => {
    const account = randomAccount();
    const id = unusedId();
    expect((await patch(account, id, { status: 'inactive' })).statusCode).toBe(404);
    expect((await get(account, id)).statusCode).toBe(404);
    expect(json(await list(account))).toEqual({ webhooks: [] });
  });

  it('answers 400 for an empty body and leaves the webhook unchanged', async () => {
    const account = randomAccount();
    const webhook = await createdWebhook(account);
    expect((await patch(account, webhook.id, {})).statusCode).toBe(400);
    expect(json(await get(account, webhook.id))).toEqual(webhook);
  });

  it('moves the webhook between the status-filtered lists when its status changes', async () => {
    const account = randomAccount();
    const [stays, moves] = await createdWebhooks(account, 2);
    expect(await listedIds(account, { status: 'active' })).toEqual([moves!.id, stays!.id]);
    expect(await listedIds(account, { status: 'inactive' })).toEqual([]);

    expect(json(await patch(account, moves!.id, { status: 'inactive' })).status).toBe('inactive');
    expect(await listedIds(account, { status: 'active' })).toEqual([stays!.id]);
    expect(await listedIds(account, { status: 'inactive' })).toEqual([moves!.id]);
    expect(await listedIds(account)).toEqual([moves!.id, stays!.id]);

    await patch(account, moves!.id, { status: 'active' });
    expect(await listedIds(account, { status: 'active' })).toEqual([moves!.id, stays!.id]);
    expect(await listedIds(account, { status: 'inactive' })).toEqual([]);
  });

  it('keeps a webhook in its status list when a patch changes other fields only', async () => {
    const account = randomAccount();
    const webhook = await createdWebhook(account);
    await patch(account, webhook.id, { status: 'inactive' });
    await patch(account, webhook.id, { name: 'renamed' });
    const [listed] = (await allPages(account, { status: 'inactive' }))[0]!.webhooks;
    expect(listed).toMatchObject({ id: webhook.id, status: 'inactive', name: 'renamed' });
  });
});

describe('delete webhook', () => {
  it('deactivates: answers 200 with the webhook as it now is, which stays readable and listed as inactive', async () => {
    const account = randomAccount();
    const webhook = await createdWebhook(account);
    const updated = json(await patch(account, webhook.id, { description: 'last state' }));
    const response = await remove(account, webhook.id);
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ...updated, status: 'inactive' });
    expect(json(await get(account, webhook.id))).toEqual({ ...updated, status: 'inactive' });
    expect(await listedIds(account, { status: 'inactive' })).toEqual([webhook.id]);
    expect(await listedIds(account, { status: 'active' })).toEqual([]);
  });

  it('with permanent=true answers 200 with the webhook as it was, and it is gone afterwards', async () => {
    const account = randomAccount();
    const webhook = await createdWebhook(account);
    const updated = json(await patch(account, webhook.id, { description: 'last state', status: 'inactive' }));
    const response = await remove(account, webhook.id, { permanent: 'true' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual(updated);
    expect((await get(account, webhook.id)).statusCode).toBe(404);
    expect(await listedIds(account)).toEqual([]);
    expect(await listedIds(account, { status: 'inactive' })).toEqual([]);
  });

  it('answers 200 when deactivating twice, and 404 when deleting permanently twice', async () => {
    const account = randomAccount();
    const webhook = await createdWebhook(account);
    expect((await remove(account, webhook.id)).statusCode).toBe(200);
    expect((await remove(account, webhook.id)).statusCode).toBe(200);
    expect((await remove(account, webhook.id, { permanent: 'true' })).statusCode).toBe(200);
    expect((await remove(account, webhook.id, { permanent: 'true' })).statusCode).toBe(404);
  });

  it("answers 404 for another account's id, as for an id that does not exist, and keeps that webhook", async () => {
    const owner = randomAccount();
    const webhook = await createdWebhook(owner);
    const caller = randomAccount();
    const missingId = unusedId();
    for (const query of [{}, { permanent: 'true' }] as Record<string, string>[]) {
      const response = await remove(caller, webhook.id, query);
      expect(response.statusCode).toBe(404);
      expect(notFoundShape(response, webhook.id)).toEqual(notFoundShape(await remove(caller, missingId, query), missingId));
    }
    expect(json(await get(owner, webhook.id))).toEqual(webhook);
  });
});

describe('list webhooks', () => {
  it('answers an account with no webhooks with an empty list and no nextPageToken', async () => {
    const response = await list(randomAccount());
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ webhooks: [] });
  });

  it('returns full pages newest first, and the last page carries no nextPageToken', async () => {
    const account = randomAccount();
    const newestFirst = idsOf(await createdWebhooks(account, 25)).reverse();
    const pages = await allPages(account, { pageSize: '10' });
    expect(pages.map((page) => idsOf(page.webhooks))).toEqual([newestFirst.slice(0, 10), newestFirst.slice(10, 20), newestFirst.slice(20)]);
    expect(pages.map((page) => typeof page.nextPageToken)).toEqual(['string', 'string', 'undefined']);
  });

  it('gives no nextPageToken when the last page is exactly full', async () => {
    const account = randomAccount();
    const newestFirst = idsOf(await createdWebhooks(account, 6)).reverse();
    const pages = await allPages(account, { pageSize: '3' });
    expect(pages.map((page) => idsOf(page.webhooks))).toEqual([newestFirst.slice(0, 3), newestFirst.slice(3)]);
    expect(pages[1]!.nextPageToken).toBeUndefined();
    expect(Object.keys(pages[1]!)).toEqual(['webhooks']);
  });

  it('returns pages of 10 by default', async () => {
    const account = randomAccount();
    await createdWebhooks(account, 11);
    const first = json(await list(account));
    expect(first.webhooks).toHaveLength(10);
    expect(first.nextPageToken).toEqual(expect.any(String));
  });

  it('lists every field of each webhook as get shows it', async () => {
    const account = randomAccount();
    const webhook = await createdWebhook(account, { name: 'listed', includeInternalTxs: true });
    expect(json(await list(account)).webhooks).toEqual([webhook]);
  });

  it('pages a status-filtered list over only the webhooks of that status', async () => {
    const account = randomAccount();
    const webhooks = await createdWebhooks(account, 7);
    const inactive = [webhooks[1]!, webhooks[4]!, webhooks[5]!];
    for (const webhook of inactive) await patch(account, webhook.id, { status: 'inactive' });
    const pages = await allPages(account, { status: 'inactive', pageSize: '2' });
    expect(pages.map((page) => idsOf(page.webhooks))).toEqual([[webhooks[5]!.id, webhooks[4]!.id], [webhooks[1]!.id]]);
    const active = webhooks.filter((webhook) => !inactive.includes(webhook));
    expect(await listedIds(account, { status: 'active', pageSize: '2' })).toEqual(idsOf(active).reverse());
  });

  it("never lists another account's webhooks", async () => {
    const [mine, theirs] = [randomAccount(), randomAccount()];
    const own = await createdWebhooks(mine, 3);
    await createdWebhooks(theirs, 3);
    expect(await listedIds(mine, { pageSize: '2' })).toEqual(idsOf(own).reverse());
  });

  it('answers 400 for a pageToken issued for another status filter', async () => {
    const account = randomAccount();
    await createdWebhooks(account, 3);
    const { nextPageToken } = json(await list(account, { status: 'active', pageSize: '1' }));
    const response = await list(account, { status: 'inactive', pageSize: '1', pageToken: nextPageToken });
    expect(response.statusCode).toBe(400);
    expect(json(response).message).toMatch(/^Invalid pageToken/);
  });

  it('answers 400 for a pageToken issued to another account', async () => {
    const [owner, caller] = [randomAccount(), randomAccount()];
    await createdWebhooks(owner, 2);
    await createdWebhooks(caller, 2);
    const { nextPageToken } = json(await list(owner, { pageSize: '1' }));
    const response = await list(caller, { pageSize: '1', pageToken: nextPageToken });
    expect(response.statusCode).toBe(400);
    expect(json(response).message).toMatch(/^Invalid pageToken/);
  });

  it.each([
    ['garbage', 'not-a-token'],
    ['over 1024 characters', 'A'.repeat(1025)],
  ])('answers 400 with the one invalid-pageToken message for a pageToken that is %s', async (_label, pageToken) => {
    const response = await list(randomAccount(), { pageToken });
    expect(response.statusCode).toBe(400);
    expect(json(response)).toEqual({ message: expect.stringMatching(/^Invalid pageToken/), statusCode: 400, error: 'Bad Request' });
  });

  it.each(['0', '101'])('answers 400 for pageSize %s', async (pageSize) => {
    const response = await list(randomAccount(), { pageSize });
    expect(response.statusCode).toBe(400);
    expect(json(response).message).toContain('pageSize');
  });
});

describe('a handler event without an authorizer account', () => {
  const events: [string, APIGatewayProxyEvent][] = [
    ['no authorizer', apiEvent({})],
    ['an authorizer without accountId', { ...apiEvent({}), requestContext: { ...apiEvent({}).requestContext, authorizer: {} } }],
    ['an empty accountId', apiEvent({ account: '' })],
  ];

  it.each(events)('answers 401 in the error shape for %s', async (_label, event) => {
    const response = await listHandler(event, context);
    expect(response.statusCode).toBe(401);
    expect(json(response)).toEqual({ message: INVALID_API_KEY_MESSAGE, statusCode: 401, error: 'Unauthorized' });
  });

  it('answers 401 on create', async () => {
    const response = await createHandler(apiEvent({ method: 'POST', body: webhookInput() }), context);
    expect(response.statusCode).toBe(401);
  });
});
