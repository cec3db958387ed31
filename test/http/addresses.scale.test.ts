import { inAddressOrder, randomAddresses, upperCased } from './support/addresses-api';
import { allAddresses, useAddressesService } from './support/addresses-service';
import { expectError } from './support/expectations';

// The scale tier (docs/testing.md): the contract's largest call, and concurrent changes of many addresses. The other addresses tests are in addresses.test.ts.
const { client, api, addresses, newWebhook } = useAddressesService();

describe('8 concurrent adds and removes of overlapping sets on one webhook', () => {
  const pool = randomAddresses(300);
  const initial = pool.slice(0, 100);
  let key: string;
  let id: string;
  let calls: { kind: 'add' | 'remove'; addresses: string[] }[];
  let outcomes: { status: number; unavailable: number }[];
  let listed: string[];
  let total: number;

  /** 200 addresses drawn from the pool, each given in lower or upper case. */
  function draw(): string[] {
    const shuffled = [...pool].sort(() => Math.random() - 0.5);
    return shuffled.slice(0, 200).map((address) => (Math.random() < 0.3 ? upperCased(address) : address));
  }

  beforeAll(async () => {
    ({ key, id } = await newWebhook(initial));
    calls = Array.from({ length: 8 }, (_, index) => ({ kind: index % 2 === 0 ? 'add' : 'remove', addresses: draw() }));
    outcomes = await Promise.all(
      calls.map(async (call) => {
        const send = () => (call.kind === 'add' ? addresses.add(key, id, call.addresses) : addresses.remove(key, id, call.addresses));
        const { response, unavailable } = await addresses.retryingOn503(send);
        return { status: response.status, unavailable };
      }),
    );
    listed = await addresses.listAll(key, id);
    total = await addresses.total(key, id);
  }, 60_000);

  it('completes every call with 200', () => {
    expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(8).fill(200));
  });

  it('counts exactly the addresses listed, each listed once, in address order', () => {
    expect(total).toBe(listed.length);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed).toEqual(inAddressOrder(listed));
  });

  it('lists only addresses of the pool: those only ever added, never those only ever removed', () => {
    const inPool = new Set(pool);
    expect(listed.filter((address) => !inPool.has(address))).toEqual([]);
    const kinds = new Map<string, Set<string>>();
    for (const call of calls) {
      for (const address of call.addresses) {
        const lower = address.toLowerCase();
        kinds.set(lower, (kinds.get(lower) ?? new Set()).add(call.kind));
      }
    }
    const onlyAdded = pool.filter((address) => kinds.get(address)?.size === 1 && kinds.get(address)!.has('add'));
    const onlyRemoved = pool.filter((address) => kinds.get(address)?.size === 1 && kinds.get(address)!.has('remove'));
    const untouched = pool.filter((address) => !kinds.has(address));
    const present = new Set(listed);
    expect(onlyAdded.filter((address) => !present.has(address))).toEqual([]);
    expect(onlyRemoved.filter((address) => present.has(address))).toEqual([]);
    expect(untouched.filter((address) => present.has(address) !== initial.includes(address))).toEqual([]);
  });

  it("shows the first 100 listed in the webhook's metadata.addresses", async () => {
    expect((await api.get(key, id)).metadata.addresses).toEqual(listed.slice(0, 100));
  });
});

describe('the per-call maximum of 10 000 addresses', () => {
  let key: string;
  let id: string;
  let sorted: string[];
  /** A create body watching `watched`. */
  const createBody = (watched: string[]) => ({
    url: 'https://receiver.example.com/hooks',
    chainId: '43114',
    eventType: 'address_activity',
    metadata: { addresses: watched },
  });

  it('creates a webhook with 10 000 addresses (201), showing the first 100', async () => {
    key = await api.newAccountKey();
    const watched = randomAddresses(10_000);
    sorted = inAddressOrder(watched);
    const response = await client.call('POST', '/v1/webhooks', { key, body: createBody(watched) });
    expect(response.status).toBe(201);
    id = response.body.id;
    expect(response.body.metadata.addresses).toEqual(sorted.slice(0, 100));
  }, 30_000);

  it('counts all 10 000 in totalAddresses', async () => {
    const page = await addresses.page(key, id, { pageSize: 100 });
    expect(page.totalAddresses).toBe(10_000);
    expect(page.addresses).toEqual(sorted.slice(0, 100));
  });

  it('lists each of the 10 000 exactly once, in address order, through 100 pages', async () => {
    const pages = await addresses.pageThrough(key, id, { pageSize: 100 });
    expect(pages).toHaveLength(100);
    expect(allAddresses(pages)).toEqual(sorted);
  });

  it('answers 400 naming the limit of 10000 for 10 001 addresses, in a create or an add', async () => {
    const tooMany = randomAddresses(10_001);
    expect(expectError(await client.call('POST', '/v1/webhooks', { key, body: createBody(tooMany) }), 400, 'metadata.addresses')).toContain('10000');
    expect(expectError(await addresses.add(key, id, tooMany), 400, 'addresses')).toContain('10000');
    expect(await addresses.total(key, id)).toBe(10_000);
  });

  it('removes all 10 000 in one DELETE', async () => {
    const response = await addresses.remove(key, id, sorted);
    expect(response.status).toBe(200);
    expect(response.body.metadata.addresses).toEqual([]);
    expect(await addresses.page(key, id)).toEqual({ addresses: [], totalAddresses: 0, hasTokenKey: false });
  }, 30_000);
});
