import { randomUUID } from 'node:crypto';
import { addAddresses, listAddresses, removeAddresses } from '../../../lib/addresses/addresses';
import { runAddressMaintenance } from '../../../lib/addresses/maintenance';
import { findActiveWatchers } from '../../../lib/addresses/watchers';
import { getAddressChange, getWebhookAddressState, putAddressChange, type AddressChange } from '../../../lib/store/addresses';
import { writeItems, type ItemWrite } from '../../../lib/store/batch';
import { tableName } from '../../../lib/store/client';
import { updateItem } from '../../../lib/store/items';
import { webhookAddressKey, webhookKey } from '../../../lib/store/table';
import { headWrites, watcherWrites } from '../../../lib/store/watch-index';
import { countAddressItems, createWatchingWebhook, randomAddresses } from '../../support/address-store';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount } from '../../support/factories';

// A short lease: a crashed holder's lease expires, and maintenance takes up its change, within seconds.
const LEASE_SECONDS = 1;
useEmbeddedStore({ LEASE_SECONDS: String(LEASE_SECONDS) });

const CHAIN = '43114';

/** Old enough for the maintenance sweep (it takes up records started over two leases ago). */
const longAgo = () => Date.now() - 3 * LEASE_SECONDS * 1000;

/**
 * What a holder that crashed part-way through its change leaves: its record, some of its writes (the
 * first `written` addresses' items and index entries), and its lease, expired at `leaseExpiresAt`.
 */
async function crashedChange(
  change: Omit<AddressChange, 'id' | 'delta' | 'chainId'>,
  options: { written: number; leaseExpiresAt: number },
): Promise<AddressChange> {
  const id = randomUUID();
  const full: AddressChange = {
    ...change,
    id,
    chainId: CHAIN,
    delta: change.kind === 'add' ? change.addresses.length : -change.addresses.length,
  };
  await putAddressChange(full);
  const done = change.addresses.slice(0, options.written);
  const writes: ItemWrite[] = [
    ...done.map((address) => {
      const key = webhookAddressKey(change.account, change.webhookId, address);
      return change.kind === 'add' ? { put: { ...key } } : { delete: key };
    }),
    // The index entries of half of those only: a batch write's requests land in any order.
    ...watcherWrites(CHAIN, change.webhookId, done.slice(0, Math.ceil(done.length / 2)), change.kind),
    ...headWrites(CHAIN, done.slice(0, Math.ceil(done.length / 2))),
  ];
  await writeItems(writes);
  await setLease(change.account, change.webhookId, { id, expiresAt: options.leaseExpiresAt });
  return full;
}

const setLease = (account: string, webhookId: string, lease: { id: string; expiresAt: number }) =>
  updateItem({
    TableName: tableName(),
    Key: webhookKey(account, webhookId),
    UpdateExpression: 'SET addressLease = :lease',
    ExpressionAttributeValues: { ':lease': lease },
  });

async function addressState(account: string, webhookId: string) {
  const state = (await getWebhookAddressState(account, webhookId))!;
  return {
    count: state.addressCount,
    items: await countAddressItems(account, webhookId),
    lease: state.lease,
    record: await getAddressChange(account, webhookId),
    shown: state.webhook.metadata.addresses,
    appliedChange: state.appliedChange,
  };
}

async function watchedBy(webhookId: string, addresses: string[]): Promise<string[]> {
  const { matches } = await findActiveWatchers(CHAIN, addresses);
  return addresses.filter((address) => matches.get(address)?.includes(webhookId));
}

/** Maintenance passes until one completes no change. */
async function maintainUntilQuiet(): Promise<number> {
  let completed = 0;
  for (let pass = 0; pass < 10; pass += 1) {
    const { changesCompleted } = await runAddressMaintenance(Date.now() + 10_000);
    if (changesCompleted === 0) return completed;
    completed += changesCompleted;
  }
  throw new Error('maintenance kept completing changes');
}

describe('an address change cut off by a crash', () => {
  it('is completed by the next change to take the lease, before its own', async () => {
    const account = randomAccount();
    const initial = randomAddresses(10);
    const webhook = await createWatchingWebhook(account, CHAIN, initial);
    const interrupted = randomAddresses(500);
    const change = await crashedChange(
      { account, webhookId: webhook.id, kind: 'add', addresses: interrupted, startedAt: Date.now() },
      { written: 200, leaseExpiresAt: Date.now() - 1 },
    );
    expect(await countAddressItems(account, webhook.id)).toBe(210);

    const next = randomAddresses(3);
    const shown = await addAddresses(account, webhook.id, { addresses: [...next, interrupted[0]!] });

    const after = await addressState(account, webhook.id);
    expect(after).toMatchObject({ count: 513, items: 513, lease: undefined, record: undefined });
    expect(after.appliedChange).not.toBe(change.id); // the new change's, applied after the leftover
    const all = [...initial, ...interrupted, ...next].sort();
    expect(shown.metadata.addresses).toEqual(all.slice(0, 100));
    expect(after.shown).toEqual(all.slice(0, 100));
    expect((await listAddresses(account, webhook.id, { pageSize: 10 })).totalAddresses).toBe(513);
    expect(await watchedBy(webhook.id, all)).toHaveLength(513);
  });

  it('waits for a lease that has not expired, then completes its change', async () => {
    const account = randomAccount();
    const webhook = await createWatchingWebhook(account, CHAIN, randomAddresses(5));
    const interrupted = randomAddresses(50);
    await crashedChange(
      { account, webhookId: webhook.id, kind: 'add', addresses: interrupted, startedAt: Date.now() },
      { written: 10, leaseExpiresAt: Date.now() + 700 },
    );
    const started = Date.now();
    await removeAddresses(account, webhook.id, { addresses: interrupted.slice(0, 20) });
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(await addressState(account, webhook.id)).toMatchObject({ count: 35, items: 35, lease: undefined, record: undefined });
  });

  it('is completed by maintenance: a remove, once its lease has expired', async () => {
    const account = randomAccount();
    const addresses = randomAddresses(300);
    const webhook = await createWatchingWebhook(account, CHAIN, addresses);
    const removing = addresses.slice(100, 250);
    await crashedChange(
      { account, webhookId: webhook.id, kind: 'remove', addresses: removing, startedAt: longAgo() },
      { written: 50, leaseExpiresAt: Date.now() - 1 },
    );
    expect(await countAddressItems(account, webhook.id)).toBe(250);

    expect(await maintainUntilQuiet()).toBe(1);

    const after = await addressState(account, webhook.id);
    expect(after).toMatchObject({ count: 150, items: 150, lease: undefined, record: undefined });
    const remaining = addresses.filter((address) => !removing.includes(address)).sort();
    expect(after.shown).toEqual(remaining.slice(0, 100));
    expect(await watchedBy(webhook.id, removing)).toEqual([]);
    expect(await watchedBy(webhook.id, remaining)).toHaveLength(150);
  });

  it('is completed by maintenance: an add cut off after its record, before any write', async () => {
    const account = randomAccount();
    const webhook = await createWatchingWebhook(account, CHAIN, randomAddresses(1));
    const adding = randomAddresses(1200);
    await crashedChange(
      { account, webhookId: webhook.id, kind: 'add', addresses: adding, startedAt: longAgo() },
      { written: 0, leaseExpiresAt: Date.now() - 1 },
    );
    expect(await maintainUntilQuiet()).toBe(1);
    expect(await addressState(account, webhook.id)).toMatchObject({ count: 1201, items: 1201, lease: undefined, record: undefined });
    expect(await watchedBy(webhook.id, adding)).toHaveLength(1200);
  });

  it('is left alone by maintenance while its lease is held (its holder is alive)', async () => {
    const account = randomAccount();
    const webhook = await createWatchingWebhook(account, CHAIN, randomAddresses(2));
    const change = await crashedChange(
      { account, webhookId: webhook.id, kind: 'add', addresses: randomAddresses(20), startedAt: longAgo() },
      { written: 5, leaseExpiresAt: Date.now() + 60_000 },
    );
    expect(await runAddressMaintenance(Date.now() + 10_000)).toMatchObject({ changesCompleted: 0 });
    expect(await addressState(account, webhook.id)).toMatchObject({ count: 2, items: 7, lease: { id: change.id }, record: { id: change.id } });
    // Released for the rest of the file's tests.
    await setLease(account, webhook.id, { id: change.id, expiresAt: Date.now() - 1 });
    await maintainUntilQuiet();
    expect(await addressState(account, webhook.id)).toMatchObject({ count: 22, items: 22, lease: undefined, record: undefined });
  });
});

describe('a change applied whose record was left', () => {
  /** A real add, then its record put back as a crash between applying it and deleting the record leaves it. */
  async function appliedWithRecordLeft() {
    const account = randomAccount();
    const webhook = await createWatchingWebhook(account, CHAIN, randomAddresses(4));
    const added = randomAddresses(6);
    await addAddresses(account, webhook.id, { addresses: added });
    const applied = (await getWebhookAddressState(account, webhook.id))!.appliedChange!;
    expect(applied).toEqual(expect.any(String));
    await putAddressChange({ id: applied, account, webhookId: webhook.id, chainId: CHAIN, kind: 'add', addresses: added, delta: 6, startedAt: longAgo() });
    return { account, webhook, applied, added };
  }

  it('is deleted by maintenance without moving the count', async () => {
    const { account, webhook, applied } = await appliedWithRecordLeft();
    expect(await addressState(account, webhook.id)).toMatchObject({ count: 10, items: 10, lease: undefined, record: { id: applied } });
    await maintainUntilQuiet();
    expect(await addressState(account, webhook.id)).toMatchObject({ count: 10, items: 10, lease: undefined, record: undefined, appliedChange: applied });
  });

  it('is deleted without moving the count by the change after a holder that crashed before recording its own', async () => {
    const { account, webhook, applied, added } = await appliedWithRecordLeft();
    // The next holder took the lease and stopped before putting its record: its lease expires.
    await setLease(account, webhook.id, { id: randomUUID(), expiresAt: Date.now() - 1 });
    await addAddresses(account, webhook.id, { addresses: [added[0]!, ...randomAddresses(1)] });
    const after = await addressState(account, webhook.id);
    expect(after).toMatchObject({ count: 11, items: 11, lease: undefined, record: undefined });
    expect(after.appliedChange).not.toBe(applied);
  });
});
