import { randomUUID } from 'node:crypto';
import { getAddress } from 'viem';
import { findActiveWatchers } from '../../lib/addresses/watchers';
import { queryWebhookAddresses } from '../../lib/store/addresses';
import { randomAccount, randomAddress } from '../support/factories';
import { addressesPath, inAddressOrder, randomAddresses, upperCased, useAddressLimits, type AddressPage } from './support/addresses-api';
import { allAddresses, useAddressesService } from './support/addresses-service';
import { expectError, expectWebhookShape } from './support/expectations';

// The per-call maximum of 10 000 addresses and 8 concurrent changes of 200 are in addresses.scale.test.ts.
const { client, api, addresses, newWebhook } = useAddressesService();

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The webhook as its responses show it, apart from the addresses it shows. */
const withoutAddresses = ({ metadata, ...webhook }: Record<string, any>) => ({ ...webhook, eventSignatures: metadata.eventSignatures });

const pageLengths = (pages: AddressPage[]) => pages.map((page) => page.addresses.length);
const tokenKeys = (pages: AddressPage[]) => pages.map((page) => page.hasTokenKey);

/** The token with the character at `index` replaced by another base64url character. */
function withCharacterChanged(token: string, index: number): string {
  const replacement = token[index] === 'A' ? 'B' : 'A';
  return token.slice(0, index) + replacement + token.slice(index + 1);
}

describe('PATCH /v1/webhooks/{id}/addresses (add)', () => {
  it('answers 200 with the webhook, its other fields unchanged', async () => {
    const { key, webhook, id } = await newWebhook();
    const response = await addresses.add(key, id, randomAddresses(3));
    expect(response.status).toBe(200);
    expectWebhookShape(response.body);
    expect(withoutAddresses(response.body)).toEqual(withoutAddresses(webhook));
    expect(await api.get(key, id)).toEqual(response.body);
  });

  it('lists the added addresses with the others in address order, and counts them exactly', async () => {
    const first = randomAddress();
    const { key, id } = await newWebhook([first]);
    const added = randomAddresses(20);
    await addresses.added(key, id, added);
    const page = await addresses.page(key, id, { pageSize: 100 });
    expect(page.addresses).toEqual(inAddressOrder([first, ...added]));
    expect(page.totalAddresses).toBe(21);
  });

  it('changes nothing when adding addresses already there, and counts only the new ones of a mixed add', async () => {
    const { key, id } = await newWebhook();
    const added = randomAddresses(20);
    await addresses.added(key, id, added);
    const before = await addresses.listAll(key, id);
    expect(await addresses.total(key, id)).toBe(21);

    await addresses.added(key, id, added);
    expect(await addresses.listAll(key, id)).toEqual(before);
    expect(await addresses.total(key, id)).toBe(21);

    const fresh = randomAddresses(5);
    await addresses.added(key, id, [...added.slice(0, 10), ...fresh]);
    expect(await addresses.listAll(key, id)).toEqual(inAddressOrder([...before, ...fresh]));
    expect(await addresses.total(key, id)).toBe(26);
  });

  it('stores mixed-case addresses lower-case, counting two spellings of one address once', async () => {
    const { key, id, webhook } = await newWebhook();
    const [one, two] = randomAddresses(2) as [string, string];
    const mixed = getAddress(two);
    const response = await addresses.add(key, id, [upperCased(one), one, mixed]);
    expect(response.status).toBe(200);
    const expected = inAddressOrder([...webhook.metadata.addresses, one, two]);
    expect(response.body.metadata.addresses).toEqual(expected);
    expect(await addresses.listAll(key, id)).toEqual(expected);
    expect(await addresses.total(key, id)).toBe(3);
    // The lower-case spelling is the same address: nothing to add.
    await addresses.added(key, id, [one, two]);
    expect(await addresses.total(key, id)).toBe(3);
  });
});

describe('DELETE /v1/webhooks/{id}/addresses (remove)', () => {
  it('answers 200 with the webhook, its other fields unchanged', async () => {
    const watched = randomAddresses(3);
    const { key, webhook, id } = await newWebhook(watched);
    const response = await addresses.remove(key, id, [watched[0]]);
    expect(response.status).toBe(200);
    expectWebhookShape(response.body);
    expect(withoutAddresses(response.body)).toEqual(withoutAddresses(webhook));
    expect(response.body.metadata.addresses).toEqual(inAddressOrder(watched.slice(1)));
    expect(await api.get(key, id)).toEqual(response.body);
  });

  it('removes the given addresses, ignores absent ones and counts exactly', async () => {
    const watched = randomAddresses(30);
    const { key, id } = await newWebhook(watched);
    const absent = randomAddresses(5);
    await addresses.removed(key, id, [...watched.slice(0, 10), ...absent]);
    expect(await addresses.listAll(key, id)).toEqual(inAddressOrder(watched.slice(10)));
    expect(await addresses.total(key, id)).toBe(20);
  });

  it('answers 200 and changes nothing when none of the addresses is there', async () => {
    const watched = randomAddresses(5);
    const { key, id, webhook } = await newWebhook(watched);
    const response = await addresses.remove(key, id, randomAddresses(3));
    expect(response.status).toBe(200);
    expect(response.body).toEqual(webhook);
    expect(await addresses.listAll(key, id)).toEqual(inAddressOrder(watched));
    expect(await addresses.total(key, id)).toBe(5);
  });

  it('removes an address given in upper case', async () => {
    const watched = randomAddresses(3);
    const { key, id } = await newWebhook(watched);
    await addresses.removed(key, id, [upperCased(watched[0]!)]);
    expect(await addresses.listAll(key, id)).toEqual(inAddressOrder(watched.slice(1)));
    expect(await addresses.total(key, id)).toBe(2);
  });

  it('can remove every address: an empty list with a count of 0, and the addresses can be added again', async () => {
    const watched = randomAddresses(12);
    const { key, id } = await newWebhook(watched);
    const response = await addresses.remove(key, id, watched);
    expect(response.body.metadata.addresses).toEqual([]);
    const page = await addresses.page(key, id);
    expect(page).toEqual({ addresses: [], totalAddresses: 0, hasTokenKey: false });
    await addresses.added(key, id, watched);
    expect(await addresses.listAll(key, id)).toEqual(inAddressOrder(watched));
    expect(await addresses.total(key, id)).toBe(12);
  });
});

describe('GET /v1/webhooks/{id}/addresses paging', () => {
  let key: string;
  let id: string;
  /** 25 addresses, in address order. */
  let sorted: string[];
  beforeAll(async () => {
    const watched = randomAddresses(25);
    ({ key, id } = await newWebhook(watched));
    sorted = inAddressOrder(watched);
  });

  it.each(['0', '101', 'x', '-1', '1.5', '1e2', ' 5'])('answers 400 naming pageSize for pageSize=%s', async (pageSize) => {
    const message = expectError(await addresses.list(key, id, { pageSize }), 400, 'pageSize');
    expect(message).toContain('1 to 100');
  });

  it('answers 400 naming an unknown query parameter', async () => {
    expectError(await addresses.list(key, id, { limit: 5 }), 400, 'limit');
  });

  it('gives 10 addresses a page by default', async () => {
    const page = await addresses.page(key, id);
    expect(page.addresses).toEqual(sorted.slice(0, 10));
    expect(page.totalAddresses).toBe(25);
    expect(typeof page.nextPageToken).toBe('string');
  });

  it('answers with exactly addresses, totalAddresses and nextPageToken', async () => {
    const response = await addresses.list(key, id, { pageSize: 3 });
    expect(Object.keys(response.body).sort()).toEqual(['addresses', 'nextPageToken', 'totalAddresses']);
  });

  it('gives full pages and no nextPageToken key on the last', async () => {
    const pages = await addresses.pageThrough(key, id, { pageSize: 10 });
    expect(pageLengths(pages)).toEqual([10, 10, 5]);
    expect(tokenKeys(pages)).toEqual([true, true, false]);
    expect(pages.map((page) => page.totalAddresses)).toEqual([25, 25, 25]);
  });

  it('ends with a full page without a token when the count is a multiple of pageSize', async () => {
    const pages = await addresses.pageThrough(key, id, { pageSize: 5 });
    expect(pageLengths(pages)).toEqual([5, 5, 5, 5, 5]);
    expect(tokenKeys(pages)).toEqual([true, true, true, true, false]);
  });

  it.each([1, 7, 25, 100])('returns every address exactly once, in address order, walking pages of %s', async (pageSize) => {
    expect(allAddresses(await addresses.pageThrough(key, id, { pageSize }))).toEqual(sorted);
  });

  it("answers 400 naming pageToken for a token of another webhook's addresses", async () => {
    const other = await api.create(key);
    await addresses.added(key, other.id, randomAddresses(5));
    const { nextPageToken } = await addresses.page(key, other.id, { pageSize: 2 });
    expectError(await addresses.list(key, id, { pageSize: 2, pageToken: nextPageToken }), 400, 'pageToken');
  });

  it("answers 400 naming pageToken for a token of another account's webhook", async () => {
    const other = await newWebhook(randomAddresses(5));
    const { nextPageToken } = await addresses.page(other.key, other.id, { pageSize: 2 });
    expectError(await addresses.list(key, id, { pageSize: 2, pageToken: nextPageToken }), 400, 'pageToken');
  });

  it('answers 400 naming pageToken for a token of the webhook list', async () => {
    await api.create(key);
    const { nextPageToken } = await api.page(key, { pageSize: 1 });
    expectError(await addresses.list(key, id, { pageToken: nextPageToken }), 400, 'pageToken');
  });

  it('answers 400 naming pageToken for an altered or made-up token', async () => {
    const { nextPageToken } = await addresses.page(key, id, { pageSize: 2 });
    const token = nextPageToken!;
    for (const altered of [withCharacterChanged(token, 5), withCharacterChanged(token, token.length - 3), `${token}A`, token.slice(1), 'x']) {
      expectError(await addresses.list(key, id, { pageSize: 2, pageToken: altered }), 400, 'pageToken');
    }
  });

  it('returns every address present throughout exactly once while addresses are added concurrently', async () => {
    const watched = randomAddresses(60);
    const { key: owner, id: webhookId } = await newWebhook(watched);
    const addedMeanwhile: string[] = [];
    let paging = true;
    const adding = (async () => {
      while (paging) {
        const batch = randomAddresses(8);
        await addresses.added(owner, webhookId, batch);
        addedMeanwhile.push(...batch);
      }
    })();
    let seen: string[];
    try {
      seen = allAddresses(await addresses.pageThrough(owner, webhookId, { pageSize: 7, beforePage: () => sleep(15) }));
    } finally {
      paging = false;
      await adding;
    }
    expect(addedMeanwhile.length).toBeGreaterThan(0);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort());
    expect(seen).toEqual(expect.arrayContaining(watched));
    const known = new Set([...watched, ...addedMeanwhile]);
    expect(seen.filter((address) => !known.has(address))).toEqual([]);
  });

  it('returns every address present throughout exactly once while others, page ends among them, are removed', async () => {
    const watched = randomAddresses(60);
    const { key: owner, id: webhookId } = await newWebhook(watched);
    const inOrder = inAddressOrder(watched);
    // Every third address goes, the last of each page of 6 among them, each just after its page is read.
    const going = inOrder.filter((_, index) => index % 3 === 2);
    const kept = inOrder.filter((_, index) => index % 3 !== 2);
    let removedSoFar = 0;
    const seen = allAddresses(
      await addresses.pageThrough(owner, webhookId, {
        pageSize: 6,
        beforePage: async () => {
          const next = going.slice(removedSoFar, removedSoFar + 2);
          removedSoFar += next.length;
          if (next.length) await addresses.removed(owner, webhookId, next);
        },
      }),
    );
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort());
    expect(seen).toEqual(expect.arrayContaining(kept));
    expect(seen.filter((address) => !inOrder.includes(address))).toEqual([]);
  });
});

describe("the webhook's metadata.addresses", () => {
  it('shows every address, in address order, when the webhook has at most 100', async () => {
    const watched = randomAddresses(100);
    const { key, id, webhook } = await newWebhook(watched.map(upperCased));
    expect(webhook.metadata.addresses).toEqual(inAddressOrder(watched));
    expect((await api.get(key, id)).metadata.addresses).toEqual(inAddressOrder(watched));
  });

  it('shows the first 100 in address order of a webhook created with 150', async () => {
    const watched = randomAddresses(150);
    const { key, id, webhook } = await newWebhook(watched);
    const first100 = inAddressOrder(watched).slice(0, 100);
    expect(webhook.metadata.addresses).toEqual(first100);
    expect((await api.get(key, id)).metadata.addresses).toEqual(first100);
    expect(await addresses.total(key, id)).toBe(150);
  });

  it('shows the same first 100 in the webhook list and in the response to an update of another field', async () => {
    const watched = randomAddresses(130);
    const { key, id } = await newWebhook(watched.slice(0, 70));
    await addresses.added(key, id, watched.slice(70));
    const first100 = inAddressOrder(watched).slice(0, 100);
    const listed = await client.call('GET', '/v1/webhooks', { key });
    expect(listed.body.webhooks).toHaveLength(1);
    expectWebhookShape(listed.body.webhooks[0]);
    expect(listed.body.webhooks[0].metadata.addresses).toEqual(first100);
    const updated = await api.patch(key, id, { name: 'renamed' });
    expect(updated.body.metadata.addresses).toEqual(first100);
    expect((await addresses.removed(key, id, [first100[0]!])).name).toBe('renamed');
  });

  it('shows the first 100 once adds take the webhook over 100', async () => {
    const watched = randomAddresses(90);
    const { key, id } = await newWebhook(watched);
    const added = randomAddresses(30);
    const response = await addresses.add(key, id, added);
    const first100 = inAddressOrder([...watched, ...added]).slice(0, 100);
    expect(response.body.metadata.addresses).toEqual(first100);
    expect((await api.get(key, id)).metadata.addresses).toEqual(first100);
    expect((await addresses.page(key, id, { pageSize: 100 })).addresses).toEqual(first100);
  });

  it('shows an added address that sorts first among the first 100, pushing out the 100th', async () => {
    const watched = randomAddresses(120);
    const { key, id } = await newWebhook(watched);
    const smallest = `0x${'0'.repeat(39)}1`;
    const response = await addresses.add(key, id, [smallest]);
    expect(response.body.metadata.addresses).toEqual([smallest, ...inAddressOrder(watched).slice(0, 99)]);
  });

  it('shifts the next address in when one of the first 100 is removed, and keeps them when one beyond is', async () => {
    const watched = randomAddresses(150);
    const { key, id } = await newWebhook(watched);
    const sorted = inAddressOrder(watched);

    const afterFirst = await addresses.removed(key, id, [sorted[0]!, sorted[57]!]);
    const remaining = sorted.filter((_, index) => index !== 0 && index !== 57);
    expect(afterFirst.metadata.addresses).toEqual(remaining.slice(0, 100));
    expect((await api.get(key, id)).metadata.addresses).toEqual(remaining.slice(0, 100));

    const afterBeyond = await addresses.removed(key, id, [sorted[140]!]);
    expect(afterBeyond.metadata.addresses).toEqual(remaining.slice(0, 100));
    expect(await addresses.total(key, id)).toBe(147);
  });

  it('shows every remaining address once removes take the webhook down to 100 or fewer', async () => {
    const watched = randomAddresses(110);
    const { key, id } = await newWebhook(watched);
    const sorted = inAddressOrder(watched);
    const response = await addresses.remove(key, id, sorted.slice(0, 15));
    expect(response.body.metadata.addresses).toEqual(sorted.slice(15));
  });
});

describe('unknown webhooks and ids', () => {
  const operations = [
    ['PATCH', (key: string, id: string) => addresses.add(key, id, [randomAddress()])],
    ['DELETE', (key: string, id: string) => addresses.remove(key, id, [randomAddress()])],
    ['GET', (key: string, id: string) => addresses.list(key, id)],
  ] as const;

  it.each(operations)('answers %s for an id that does not exist with 404', async (_, send) => {
    expectError(await send(await api.newAccountKey(), randomUUID()), 404);
  });

  it.each(operations)("answers %s for another account's webhook with 404, and leaves its addresses as they were", async (_, send) => {
    const watched = randomAddresses(3);
    const owner = await newWebhook(watched);
    expectError(await send(await api.newAccountKey(), owner.id), 404);
    expect(await addresses.listAll(owner.key, owner.id)).toEqual(inAddressOrder(watched));
    expect(await addresses.total(owner.key, owner.id)).toBe(3);
    expect(await api.get(owner.key, owner.id)).toEqual(owner.webhook);
  });

  it.each(['PATCH', 'DELETE', 'GET'])('answers %s with a malformed id with 400 naming id', async (method) => {
    const key = await api.newAccountKey();
    for (const id of ['not-a-uuid', '12345', `${randomUUID()}0`]) {
      const body = method === 'GET' ? undefined : { addresses: [randomAddress()] };
      expectError(await client.call(method, addressesPath(id), { key, body }), 400, 'id');
    }
  });
});

describe('the addresses path', () => {
  it.each(['POST', 'PUT'])('answers %s with 405 and an Allow header listing DELETE, GET and PATCH', async (method) => {
    const { key, id } = await newWebhook();
    const response = await client.call(method, addressesPath(id), { key, body: { addresses: [randomAddress()] } });
    expectError(response, 405);
    expect((response.headers.get('allow') ?? '').split(',').map((part) => part.trim()).sort()).toEqual(['DELETE', 'GET', 'PATCH']);
  });

  it.each(['PATCH', 'DELETE', 'GET'])('answers %s without an API key with 401, and changes nothing', async (method) => {
    const watched = randomAddresses(2);
    const { key, id } = await newWebhook(watched);
    const body = method === 'GET' ? undefined : { addresses: [watched[0], randomAddress()] };
    expectError(await client.call(method, addressesPath(id), { body }), 401);
    expect(await addresses.listAll(key, id)).toEqual(inAddressOrder(watched));
  });
});

describe('invalid add and remove requests', () => {
  let key: string;
  let id: string;
  let watched: string[];
  beforeAll(async () => {
    watched = randomAddresses(3);
    ({ key, id } = await newWebhook(watched));
  });
  /** Every invalid request leaves the webhook's addresses as they were. */
  afterEach(async () => {
    expect(await addresses.listAll(key, id)).toEqual(inAddressOrder(watched));
    expect(await addresses.total(key, id)).toBe(3);
  });

  const changes = [
    ['PATCH', (body: unknown) => client.call('PATCH', addressesPath(id), { key, body })],
    ['DELETE', (body: unknown) => client.call('DELETE', addressesPath(id), { key, body })],
  ] as const;

  it.each(changes)('answers %s with an empty array with 400 naming addresses', async (_, send) => {
    expectError(await send({ addresses: [] }), 400, 'addresses');
  });

  it.each(changes)('answers %s with addresses that are not an array with 400 naming addresses', async (_, send) => {
    for (const value of [randomAddress(), {}, 5, null]) expectError(await send({ addresses: value }), 400, 'addresses');
  });

  it.each(changes)('answers %s without addresses with 400 naming addresses', async (_, send) => {
    expectError(await send({}), 400, 'addresses');
  });

  it.each(changes)('answers %s with a malformed address with 400 naming addresses', async (_, send) => {
    const good = randomAddress();
    for (const bad of ['0x123', `0x${'g'.repeat(40)}`, upperCased(good).replace('0x', '0X'), good.slice(2), `${good}0`, ` ${good}`, 42]) {
      const message = expectError(await send({ addresses: [good, bad] }), 400, 'addresses');
      expect(message).toContain('addresses[1]');
    }
  });

  it.each(changes)('answers %s with an unknown body field with 400 naming it', async (_, send) => {
    const message = expectError(await send({ addresses: [randomAddress()], chainId: '1' }), 400, 'chainId');
    expect(message).toContain('addresses');
  });

  it.each(changes)('answers %s with a body that is not JSON or not an object with 400', async (_, send) => {
    expectError(await send('{"addresses": ['), 400);
    expectError(await send([randomAddress()]), 400);
  });

  it('answers 415 for a DELETE whose body is sent with a non-JSON content-type', async () => {
    const body = JSON.stringify({ addresses: [watched[0]] });
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1']) {
      const response = await client.call('DELETE', addressesPath(id), { key, body, headers: { 'content-type': contentType } });
      expectError(response, 415);
    }
  });

  it('answers 415 for a PATCH whose body is sent with a non-JSON content-type', async () => {
    const body = JSON.stringify({ addresses: [randomAddress()] });
    expectError(await client.call('PATCH', addressesPath(id), { key, body, headers: { 'content-type': 'text/plain' } }), 415);
  });
});

describe('address limits (MAX_ADDRESSES_PER_CALL=50, MAX_ADDRESSES_PER_WEBHOOK=120)', () => {
  useAddressLimits({ perCall: 50, perWebhook: 120 });

  it.each(['PATCH', 'DELETE'])('answers %s with more than 50 distinct addresses with 400 naming addresses and the limit', async (method) => {
    const watched = randomAddresses(10);
    const { key, id } = await newWebhook(watched);
    const body = { addresses: [...watched, ...randomAddresses(41)] };
    const message = expectError(await client.call(method, addressesPath(id), { key, body }), 400, 'addresses');
    expect(message).toContain('at most 50');
    expect(await addresses.total(key, id)).toBe(10);
    expect(await addresses.listAll(key, id)).toEqual(inAddressOrder(watched));
  });

  it('counts the per-call limit after normalizing: 50 distinct addresses and repeats in another case are accepted', async () => {
    const { key, id, webhook } = await newWebhook();
    const added = randomAddresses(50);
    await addresses.added(key, id, [...added, ...added.slice(0, 10).map(upperCased)]);
    expect(await addresses.total(key, id)).toBe(51);
    expect(await addresses.listAll(key, id)).toEqual(inAddressOrder([...webhook.metadata.addresses, ...added]));
  });

  it('answers a create with more than 50 addresses with 400 naming metadata.addresses', async () => {
    const key = await api.newAccountKey();
    const response = await client.call('POST', '/v1/webhooks', {
      key,
      body: { url: 'https://receiver.example.com/hooks', chainId: '43114', eventType: 'address_activity', metadata: { addresses: randomAddresses(51) } },
    });
    expect(expectError(response, 400, 'metadata.addresses')).toContain('at most 50');
    expect(await api.listAllIds(key)).toEqual([]);
  });

  it('answers an add that would take the webhook over 120 with 400 naming the limit, and adds none of it', async () => {
    const watched = randomAddresses(100);
    const { key, id } = await newWebhook(watched.slice(0, 50));
    await addresses.added(key, id, watched.slice(50));
    const attempted = randomAddresses(21);
    // 10 already there and 21 new: 121 addresses, one over.
    const message = expectError(await addresses.add(key, id, [...watched.slice(0, 10), ...attempted]), 400, 'addresses');
    expect(message).toContain('120');
    expect(await addresses.total(key, id)).toBe(100);
    const listed = new Set(await addresses.listAll(key, id));
    expect(listed.size).toBe(100);
    expect(attempted.filter((address) => listed.has(address))).toEqual([]);
    expect((await api.get(key, id)).metadata.addresses).toEqual(inAddressOrder(watched));
  });

  it('lets a webhook reach exactly 120, counting only the addresses not there yet, and refuses one more', async () => {
    const watched = randomAddresses(100);
    const { key, id } = await newWebhook(watched.slice(0, 50));
    await addresses.added(key, id, watched.slice(50));
    const last20 = randomAddresses(20);
    await addresses.added(key, id, [...watched.slice(0, 30), ...last20]);
    expect(await addresses.total(key, id)).toBe(120);
    // Nothing new: accepted at the limit.
    await addresses.added(key, id, last20);
    expectError(await addresses.add(key, id, [randomAddress()]), 400, 'addresses');
    expect(await addresses.total(key, id)).toBe(120);
    // Room again after a remove.
    await addresses.removed(key, id, [last20[0]!]);
    await addresses.added(key, id, [randomAddress()]);
    expect(await addresses.total(key, id)).toBe(120);
  });
});

describe('DELETE /v1/webhooks/{id}?permanent=true and its addresses', () => {
  it('makes all three addresses operations answer 404 at once', async () => {
    const { key, id } = await newWebhook(randomAddresses(20));
    expect((await client.call('DELETE', `/v1/webhooks/${id}?permanent=true`, { key })).status).toBe(200);
    expectError(await addresses.list(key, id), 404);
    expectError(await addresses.add(key, id, [randomAddress()]), 404);
    expectError(await addresses.remove(key, id, [randomAddress()]), 404);
  });

  it("leaves other accounts' webhooks watching the same addresses as they were, once its addresses are purged", async () => {
    const shared = randomAddresses(3);
    const account = randomAccount();
    const key = await api.keyFor(account);
    const deleted = await api.create(key, { metadata: { addresses: [...shared, ...randomAddresses(30)] } });

    const otherAccount = randomAccount();
    const otherKey = await api.keyFor(otherAccount);
    const before = await api.create(otherKey, { metadata: { addresses: [shared[0]] } });
    expect((await client.call('DELETE', `/v1/webhooks/${deleted.id}?permanent=true`, { key })).status).toBe(200);
    const after = await api.create(otherKey, { metadata: { addresses: [shared[1], shared[2]] } });

    // The purge runs in the background, every half second or so: wait until the addresses are gone.
    const deadline = Date.now() + 10_000;
    while ((await queryWebhookAddresses(account, deleted.id, 1)).addresses.length > 0) {
      if (Date.now() > deadline) throw new Error('the deleted webhook was not purged within 10 s');
      await sleep(200);
    }

    expect(await addresses.page(otherKey, before.id)).toEqual({ addresses: [shared[0]], totalAddresses: 1, hasTokenKey: false });
    expect(await addresses.page(otherKey, after.id)).toEqual({
      addresses: inAddressOrder([shared[1]!, shared[2]!]),
      totalAddresses: 2,
      hasTokenKey: false,
    });
    expect((await api.get(otherKey, before.id)).metadata.addresses).toEqual([shared[0]]);
    // The matcher still finds the other account's webhooks, and no longer the deleted one.
    const { matches } = await findActiveWatchers(deleted.chainId, shared);
    expect(matches.get(shared[0]!)).toEqual([before.id]);
    expect(matches.get(shared[1]!)).toEqual([after.id]);
    expect(matches.get(shared[2]!)).toEqual([after.id]);
  });
});
