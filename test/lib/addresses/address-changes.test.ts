import { randomUUID } from 'node:crypto';
import { addAddresses, removeAddresses } from '../../../lib/addresses/addresses';
import { runAddressMaintenance } from '../../../lib/addresses/maintenance';
import { getWebhookAddressState, putAddressChange } from '../../../lib/store/addresses';
import {
  addressState,
  CHAIN,
  crashedChange,
  longAgo,
  maintainUntilQuiet,
  setLease,
  useShortLeaseStore,
  watchedBy,
} from '../../support/address-changes';
import { countAddressItems, createWatchingWebhook, randomAddresses } from '../../support/address-store';
import { randomAccount } from '../../support/factories';

// Changes of 500 and 1 200 addresses completed after a crash are in address-changes.scale.test.ts.
useShortLeaseStore();

describe('an address change cut off by a crash', () => {
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
