import { randomUUID } from 'node:crypto';
import { listDeliveries } from '../../../lib/deliveries/messages';
import { createWebhookBody } from '../../../lib/schemas/webhook';
import { createWebhook, updateWebhook } from '../../../lib/webhooks/webhooks';
import { runtimeConfig, useRuntimeConfig } from '../../../lib/config/runtime';
import { admitAttempt, CIRCUIT_OPENS_AFTER, ConsumerAdmissions, describeEndpoint, type Admission } from '../../../lib/deliveries/admission';
import { dynamoDb, tableName } from '../../../lib/store/client';
import { getEndpointHealth, originOf, toEndpointHealth, type EndpointRef } from '../../../lib/store/endpoint-health';
import { queryItems } from '../../../lib/store/items';
import { attemptSlotsPartition, SLOTS_PER_SHARD, slotShards, type SlotPool } from '../../../lib/store/table';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, webhookInput } from '../../support/factories';

const PER_ACCOUNT = 3;
const PER_HOST = 2;
const TIMEOUT_MS = 10_000;

useEmbeddedStore({
  DELIVERY_CONCURRENCY_PER_ACCOUNT: String(PER_ACCOUNT),
  DELIVERY_CONCURRENCY_PER_HOST: String(PER_HOST),
  DELIVERY_TIMEOUT_SECONDS: String(TIMEOUT_MS / 1000),
});

const WRITE_COMMANDS = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'BatchWriteItemCommand']);
/** Writes of the slots and the endpoint's state: not those of the destinations' rate counters (`RATE#…`), counted apart. */
const store = { writes: 0, rateWrites: 0, failDeletes: false };

beforeAll(() => {
  // Before the client's first call of each command: it resolves its middleware stack once per command.
  dynamoDb().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Key?: { pk?: { S?: string } }; Item?: { pk?: { S?: string } } };
      const rate = (input.Key ?? input.Item)?.pk?.S?.startsWith('RATE#');
      if (WRITE_COMMANDS.has(context.commandName ?? '')) store[rate ? 'rateWrites' : 'writes'] += 1;
      if (store.failDeletes && context.commandName === 'DeleteItemCommand') throw Object.assign(new Error('store unavailable'), { name: 'ServiceUnavailable' });
      return next(args);
    },
    { step: 'initialize', name: 'admissionTestWrites' },
  );
});

const DELIVERED = { delivered: true };
const FAILED = { delivered: false };

// A site of its own each (`.example` is no public suffix: the name is its registrable domain).
const newEndpoint = (account = randomAccount()): EndpointRef => ({ account, origin: `https://${randomUUID()}.example` });
const request = (endpoint: EndpointRef, deferrals?: number) => ({ ...endpoint, webhookId: randomUUID(), messageId: randomUUID(), deferrals });

/** Admits one attempt as the consumer does: the endpoint's health read just before. */
async function admit(endpoint: EndpointRef, address = '10.0.0.1', now = Date.now(), deferrals?: number): Promise<Admission> {
  return admitAttempt(request(endpoint, deferrals), await getEndpointHealth(endpoint), async () => address, now);
}

async function attempt(endpoint: EndpointRef, outcome: { delivered: boolean }): Promise<void> {
  const admission = await admit(endpoint);
  if (!admission.admitted) throw new Error(`refused: ${admission.limit}`);
  await admission.release(outcome);
}

/** Slots of the pool held at `now`: of one shard, or of its first (the only one of the small pools here). */
async function slotsHeld(pool: SlotPool, now = Date.now(), shard = 0): Promise<number> {
  const { items } = await queryItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': attemptSlotsPartition(pool, shard) },
    ConsistentRead: true,
  });
  return items.filter((item) => item.heldUntil > now).length;
}

describe('admitAttempt', () => {
  it("takes a slot of the account's, the site's and the address's pool for every attempt, and a healthy endpoint's successes write nothing else", async () => {
    const endpoint = newEndpoint();
    for (let round = 0; round < 3; round += 1) {
      store.writes = 0;
      const admission = await admit(endpoint);
      expect(admission).toMatchObject({ admitted: true, probe: false });
      const site = new URL(endpoint.origin).hostname;
      expect([await slotsHeld({ account: endpoint.account }), await slotsHeld({ account: endpoint.account, site }), await slotsHeld({ account: endpoint.account, address: '10.0.0.1' })]).toEqual([1, 1, 1]);
      if (admission.admitted) await admission.release(DELIVERED);
      // Three slots taken and three freed.
      expect(store.writes).toBe(6);
    }
    expect(await getEndpointHealth(endpoint)).toEqual({ consecutiveFailures: 0 });
  });

  it('takes one host slot for a URL whose host is an IP address: its site is that address', async () => {
    const account = randomAccount();
    const endpoint = { account, origin: 'http://10.9.0.1:8080' };
    store.writes = 0;
    const admission = await admitAttempt(request(endpoint), await getEndpointHealth(endpoint), async () => '10.9.0.1');
    expect(admission).toMatchObject({ admitted: true });
    expect(await slotsHeld({ account, site: '10.9.0.1' })).toBe(1);
    expect(await slotsHeld({ account, address: '10.9.0.1' })).toBe(0);
    if (admission.admitted) await admission.release(DELIVERED);
    expect(store.writes).toBe(4);
  });

  it("counts an account's subdomains of one registrable domain as one site, whatever their addresses; a public suffix's tenants are sites of their own", async () => {
    const at = (account: string, origin: string, address: string) => admitAttempt(request({ account, origin }), toEndpointHealth(undefined), async () => address);
    const account = randomAccount();
    const subdomains = await Promise.all(Array.from({ length: 4 }, (_, index) => at(account, `https://hook${index}.tenant.co.uk`, `10.8.0.${index}`)));
    expect(subdomains.filter((admission) => admission.admitted)).toHaveLength(PER_HOST);
    expect(await slotsHeld({ account, site: 'tenant.co.uk' })).toBe(PER_HOST);
    // github.io is a public suffix (the list's private section): each of its tenants is a site, and only the account's slots bind.
    const another = randomAccount();
    const pages = await Promise.all(['one', 'two', 'three', 'four'].map((name, index) => at(another, `https://${name}.github.io`, `10.8.1.${index}`)));
    expect(pages.filter((admission) => admission.admitted)).toHaveLength(PER_ACCOUNT);
    expect(pages.find((admission) => !admission.admitted)).toMatchObject({ limit: 'perAccount' });
  });

  it("spreads a large pool's slots over partitions of 4, reading up to four of them, and never admits more than its capacity", async () => {
    const config = runtimeConfig();
    const capacity = 40;
    useRuntimeConfig({ ...config, delivery: { ...config.delivery, concurrency: { ...config.delivery.concurrency, perAccount: capacity, perHost: capacity } } });
    try {
      const account = randomAccount();
      const admissions: Admission[] = [];
      for (let round = 0; round < 3; round += 1) {
        admissions.push(...(await Promise.all(Array.from({ length: 20 }, (_, index) => admitAttempt(request(newEndpoint(account)), toEndpointHealth(undefined), async () => `10.7.${round}.${index}`)))));
      }
      const admitted = admissions.filter((admission) => admission.admitted).length;
      expect(admitted).toBeLessThanOrEqual(capacity);
      // Near the capacity an attempt may be put off with a slot free in a partition it did not read.
      expect(admitted).toBeGreaterThanOrEqual(capacity - 2 * SLOTS_PER_SHARD);
      const perShard = await Promise.all(Array.from({ length: slotShards(capacity) }, (_, shard) => slotsHeld({ account }, Date.now(), shard)));
      expect(perShard).toHaveLength(10);
      expect(perShard.reduce((sum, count) => sum + count, 0)).toBe(admitted);
      expect(Math.max(...perShard)).toBeLessThanOrEqual(SLOTS_PER_SHARD);
    } finally {
      useRuntimeConfig(config);
    }
  });

  it("puts off an attempt past its destination's rate a second, whichever account sends it, and leases the rate in fewer writes than attempts", async () => {
    const config = runtimeConfig();
    const admissions: Admission[] = [];
    try {
      useRuntimeConfig({ ...config, delivery: { ...config.delivery, destinationRatePerSecond: 3 } });
      // Early in a second: every attempt below falls in it.
      await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 10));
      const site = `${randomUUID()}.example`;
      const address = `10.5.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
      for (let index = 0; index < 4; index += 1) {
        admissions.push(await admitAttempt(request({ account: randomAccount(), origin: `https://hook${index}.${site}` }), toEndpointHealth(undefined), async () => address));
      }
      expect(admissions.slice(0, 3).every((admission) => admission.admitted)).toBe(true);
      expect(admissions[3]).toMatchObject({ admitted: false, limit: 'perDestination' });

      useRuntimeConfig({ ...config, delivery: { ...config.delivery, destinationRatePerSecond: 1000 } });
      const consumer = new ConsumerAdmissions();
      const busy = `${randomUUID()}.example`;
      await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 10));
      store.rateWrites = 0;
      for (let index = 0; index < 10; index += 1) {
        admissions.push(await admitAttempt(request({ account: randomAccount(), origin: `https://${busy}` }), toEndpointHealth(undefined), async () => '10.5.255.1', undefined, consumer));
      }
      expect(admissions.slice(-10).every((admission) => admission.admitted)).toBe(true);
      // Per destination (its site, its address), ten attempts in leases of 1, 2, 4 and 8: four writes, and one
      // more for each of its counter's two partitions that has no second under way yet when a lease comes to it.
      expect(store.rateWrites).toBeGreaterThanOrEqual(10);
      expect(store.rateWrites).toBeLessThanOrEqual(12);
    } finally {
      useRuntimeConfig(config);
      await Promise.all(admissions.map((admission) => (admission.admitted ? admission.release() : undefined)));
    }
  });

  it('admits exactly perAccount of 20 attempts asking at once to different hosts', async () => {
    const account = randomAccount();
    const admissions = await Promise.all(
      Array.from({ length: 20 }, (_, index) => admitAttempt(request(newEndpoint(account)), toEndpointHealth(undefined), async () => `10.1.0.${index}`, Date.now())),
    );
    expect(admissions.filter((admission) => admission.admitted)).toHaveLength(PER_ACCOUNT);
    expect(admissions.filter((admission) => !admission.admitted && admission.limit === 'perAccount')).toHaveLength(20 - PER_ACCOUNT);
    expect(await slotsHeld({ account })).toBe(PER_ACCOUNT);
    // A refused attempt holds no host slot either.
    const hostSlots = await Promise.all(Array.from({ length: 20 }, (_, index) => slotsHeld({ account, address: `10.1.0.${index}` })));
    expect(hostSlots.reduce((sum, count) => sum + count, 0)).toBe(PER_ACCOUNT);
  });

  it('caps attempts per account and resolved address, a refusal writing nothing; another account has its own slots for the same address', async () => {
    const account = randomAccount();
    const address = '10.2.0.1';
    const admissions: Admission[] = [];
    for (let count = 0; count < 6; count += 1) admissions.push(await admit(newEndpoint(account), address));
    expect(admissions.filter((admission) => admission.admitted)).toHaveLength(PER_HOST);
    expect(admissions.filter((admission) => !admission.admitted && admission.limit === 'perHost')).toHaveLength(6 - PER_HOST);
    expect(await slotsHeld({ account })).toBe(PER_HOST);
    const endpoint = newEndpoint(account);
    const health = await getEndpointHealth(endpoint);
    const writesBefore = store.writes;
    expect(await admitAttempt(request(endpoint), health, async () => address)).toMatchObject({ admitted: false, limit: 'perHost' });
    expect(store.writes).toBe(writesBefore);

    expect(await admit(newEndpoint(account), '10.2.0.2')).toMatchObject({ admitted: true });
    expect(await admit(newEndpoint(), address)).toMatchObject({ admitted: true });
  });

  it('frees slots on release, and a holder that never releases once its lease has ended', async () => {
    const account = randomAccount();
    const address = '10.3.0.1';
    const held = await Promise.all(Array.from({ length: PER_HOST }, () => admit(newEndpoint(account), address)));
    const refused = await admit(newEndpoint(account), address);
    expect(refused).toMatchObject({ admitted: false, limit: 'perHost' });

    if (held[0]!.admitted) await held[0]!.release(FAILED);
    expect(await admit(newEndpoint(account), address)).toMatchObject({ admitted: true });
    expect(await admit(newEndpoint(account), address)).toMatchObject({ admitted: false, limit: 'perHost' });

    // Nobody releases: after the attempt's timeout and the lease's margin, the slots are free again.
    const later = Date.now() + TIMEOUT_MS + 6_000;
    const afterLeases = await Promise.all(Array.from({ length: PER_HOST }, () => admit(newEndpoint(account), address, later)));
    expect(afterLeases.every((admission) => admission.admitted)).toBe(true);
  });

  it('puts a refused attempt off for a quarter of the timeout, doubling with each deferral up to 16 times that, jittered', async () => {
    const account = randomAccount();
    const address = '10.4.0.1';
    await Promise.all(Array.from({ length: PER_HOST }, () => admit(newEndpoint(account), address)));
    const now = Date.now();
    for (const [deferrals, factor] of [[0, 1], [2, 4], [9, 16]] as const) {
      const refused = await admit(newEndpoint(account), address, now, deferrals);
      if (refused.admitted) throw new Error('admitted');
      expect(refused.retryAt - now).toBeGreaterThanOrEqual((TIMEOUT_MS / 4) * factor * 0.5);
      expect(refused.retryAt - now).toBeLessThanOrEqual((TIMEOUT_MS / 4) * factor * 1.5);
    }
  });

  it('does not throw when a release cannot be written', async () => {
    const admission = await admit(newEndpoint());
    store.failDeletes = true;
    try {
      if (admission.admitted) await expect(admission.release(DELIVERED)).resolves.toBeUndefined();
    } finally {
      store.failDeletes = false;
    }
  });
});

describe('the circuit', () => {
  async function failingEndpoint(failures: number): Promise<EndpointRef> {
    const endpoint = newEndpoint();
    for (let count = 0; count < failures; count += 1) await attempt(endpoint, FAILED);
    return endpoint;
  }

  it(`opens after ${CIRCUIT_OPENS_AFTER} failed attempts in a row, counting from the first failure`, async () => {
    const before = Date.now();
    const endpoint = await failingEndpoint(CIRCUIT_OPENS_AFTER - 1);
    expect(await admit(endpoint)).toMatchObject({ admitted: true, probe: false });
    await attempt(endpoint, FAILED);
    const health = await getEndpointHealth(endpoint);
    expect(health.consecutiveFailures).toBe(CIRCUIT_OPENS_AFTER);
    expect(health.failingSince).toBeGreaterThanOrEqual(before);
    expect(describeEndpoint(health)).toEqual({
      status: 'failing',
      failingSince: health.failingSince,
      consecutiveFailures: CIRCUIT_OPENS_AFTER,
      circuitOpen: true,
    });
  });

  it('admits one probe at a time; the others wait at least until its lease ends, jittered', async () => {
    const endpoint = await failingEndpoint(CIRCUIT_OPENS_AFTER);
    const now = Date.now();
    const admissions = await Promise.all(Array.from({ length: 5 }, () => admit(endpoint, '10.6.0.1', now)));
    expect(admissions.filter((admission) => admission.admitted && admission.probe)).toHaveLength(1);
    const refused = admissions.filter((admission) => !admission.admitted);
    expect(refused).toHaveLength(4);
    const probeUntil = (await getEndpointHealth(endpoint)).probeUntil!;
    for (const admission of refused) {
      if (admission.admitted) continue;
      expect(admission.limit).toBe('circuit');
      expect(admission.retryAt).toBeGreaterThanOrEqual(now + (probeUntil - now) * 0.8);
      expect(admission.retryAt).toBeLessThanOrEqual(now + (probeUntil - now) * 1.2);
    }
  });

  it('refuses without a write while the probe read with the message is under way', async () => {
    const endpoint = await failingEndpoint(CIRCUIT_OPENS_AFTER);
    expect(await admit(endpoint)).toMatchObject({ admitted: true, probe: true });
    const writes = store.writes;
    expect(await admit(endpoint)).toMatchObject({ admitted: false, limit: 'circuit' });
    expect(store.writes).toBe(writes);
  });

  it('admits the next probe once a failed probe is released or a probe lease has ended', async () => {
    const endpoint = await failingEndpoint(CIRCUIT_OPENS_AFTER);
    const probe = await admit(endpoint);
    expect(probe).toMatchObject({ admitted: true, probe: true });
    if (probe.admitted) await probe.release(FAILED);
    expect((await getEndpointHealth(endpoint)).consecutiveFailures).toBe(CIRCUIT_OPENS_AFTER + 1);

    const crashed = await admit(endpoint);
    expect(crashed).toMatchObject({ admitted: true, probe: true });
    expect(await admit(endpoint)).toMatchObject({ admitted: false, limit: 'circuit' });
    expect(await admit(endpoint, '10.0.0.1', Date.now() + TIMEOUT_MS + 6_000)).toMatchObject({ admitted: true, probe: true });
  });

  it('closes on a successful probe: the endpoint is healthy again', async () => {
    const endpoint = await failingEndpoint(CIRCUIT_OPENS_AFTER);
    const probe = await admit(endpoint);
    if (!probe.admitted) throw new Error('refused');
    await probe.release(DELIVERED);
    const health = await getEndpointHealth(endpoint);
    expect(health).toEqual({ consecutiveFailures: 0 });
    expect(describeEndpoint(health)).toEqual({ status: 'healthy' });
    expect(await admit(endpoint)).toMatchObject({ admitted: true, probe: false });
  });

  it('brings a message the open circuit refuses again back twice as late each time, up to 16 times as late', async () => {
    const endpoint = await failingEndpoint(CIRCUIT_OPENS_AFTER);
    await admit(endpoint); // the probe, under way
    const now = Date.now();
    const waits = [];
    for (const deferrals of [0, 1, 2, 3, 4, 8]) {
      const refused = await admit(endpoint, '10.0.0.1', now, deferrals);
      if (refused.admitted) throw new Error('admitted');
      waits.push(refused.retryAt - now);
    }
    // Just failing: 10 s (jittered by ±20 %), behind the probe's lease, then doubled up to 16 times.
    expect(waits[1]!).toBeGreaterThanOrEqual(20_000 * 0.8);
    expect(waits[4]!).toBeGreaterThanOrEqual(160_000 * 0.8);
    expect(waits[5]!).toBeLessThanOrEqual(160_000 * 1.2);
  });

  it('waits longer the longer the endpoint has been failing, at most 15 minutes', async () => {
    const endpoint = await failingEndpoint(CIRCUIT_OPENS_AFTER);
    await admit(endpoint); // the probe, under way
    const failingSince = (await getEndpointHealth(endpoint)).failingSince!;
    const hourLater = failingSince + 3_600_000;
    // The probe's lease has ended by then: the next attempt is the probe.
    const probe = await admitAttempt(request(endpoint), await getEndpointHealth(endpoint), async () => '10.0.0.1', hourLater);
    expect(probe).toMatchObject({ admitted: true, probe: true });
    const later = await admitAttempt(request(endpoint), await getEndpointHealth(endpoint), async () => '10.0.0.1', hourLater);
    if (later.admitted) throw new Error('admitted');
    expect(later.retryAt - hourLater).toBeGreaterThanOrEqual(15 * 60_000 * 0.8);
    expect(later.retryAt - hourLater).toBeLessThanOrEqual(15 * 60_000 * 1.2);
  });
});

describe('describeEndpoint', () => {
  it('shows an unknown endpoint and one whose last attempt was delivered as healthy', () => {
    expect(describeEndpoint(toEndpointHealth(undefined))).toEqual({ status: 'healthy' });
    expect(describeEndpoint({ consecutiveFailures: 0 })).toEqual({ status: 'healthy' });
  });

  it('shows a failing endpoint with its failures and a closed circuit below the threshold', () => {
    expect(describeEndpoint({ consecutiveFailures: 2, failingSince: 1_700_000_000_000 })).toEqual({
      status: 'failing',
      failingSince: 1_700_000_000_000,
      consecutiveFailures: 2,
      circuitOpen: false,
    });
  });
});

describe('the delivery log', () => {
  it("shows the endpoint's state beside the deliveries", async () => {
    const account = randomAccount();
    const webhook = await createWebhook(account, createWebhookBody.parse(webhookInput()));
    const endpoint = { account, origin: originOf(webhook.url) };
    expect((await listDeliveries(account, webhook.id, { pageSize: 10 })).endpoint).toEqual({ status: 'healthy' });

    const before = Date.now();
    for (let count = 0; count < CIRCUIT_OPENS_AFTER; count += 1) await attempt(endpoint, FAILED);
    const { endpoint: shown } = await listDeliveries(account, webhook.id, { pageSize: 10 });
    expect(shown).toEqual({ status: 'failing', failingSince: expect.any(Number), consecutiveFailures: CIRCUIT_OPENS_AFTER, circuitOpen: true });
    expect(shown.failingSince).toBeGreaterThanOrEqual(before);
  });

  it("shows, for a URL moved to another origin, that endpoint's state: a new endpoint", async () => {
    const account = randomAccount();
    const webhook = await createWebhook(account, createWebhookBody.parse(webhookInput({ url: 'https://old.example.com/hooks' })));
    for (let count = 0; count < CIRCUIT_OPENS_AFTER; count += 1) await attempt({ account, origin: originOf(webhook.url) }, FAILED);
    await updateWebhook(account, webhook.id, { url: 'https://new.example.com/hooks' });
    expect((await listDeliveries(account, webhook.id, { pageSize: 10 })).endpoint).toEqual({ status: 'healthy' });
    // The old origin's state is its own, kept for the account's other webhooks there.
    expect((await getEndpointHealth({ account, origin: 'https://old.example.com' })).consecutiveFailures).toBe(CIRCUIT_OPENS_AFTER);
  });

  it("shares one endpoint's state between the account's webhooks at its origin, and no other account's", async () => {
    const [account, other] = [randomAccount(), randomAccount()];
    const url = (path: string) => `https://shared-${randomUUID()}.example.com/${path}`;
    const first = await createWebhook(account, createWebhookBody.parse(webhookInput({ url: url('a') })));
    const second = await createWebhook(account, createWebhookBody.parse(webhookInput({ url: `${originOf(first.url)}/b` })));
    const elsewhere = await createWebhook(other, createWebhookBody.parse(webhookInput({ url: `${originOf(first.url)}/c` })));
    for (let count = 0; count < CIRCUIT_OPENS_AFTER; count += 1) await attempt({ account, origin: originOf(first.url) }, FAILED);
    expect((await listDeliveries(account, second.id, { pageSize: 10 })).endpoint).toMatchObject({ status: 'failing', circuitOpen: true });
    expect((await listDeliveries(other, elsewhere.id, { pageSize: 10 })).endpoint).toEqual({ status: 'healthy' });
  });
});
