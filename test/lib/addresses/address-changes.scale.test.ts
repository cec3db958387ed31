import { addAddresses, listAddresses } from '../../../lib/addresses/addresses';
import { addressState, CHAIN, crashedChange, longAgo, maintainUntilQuiet, useShortLeaseStore, watchedBy } from '../../support/address-changes';
import { countAddressItems, createWatchingWebhook, randomAddresses } from '../../support/address-store';
import { randomAccount } from '../../support/factories';

// The scale tier (docs/testing.md): changes of many addresses completed after a crash. The others are in address-changes.test.ts.
useShortLeaseStore();

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
});
