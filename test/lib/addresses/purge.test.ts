import { randomUUID } from 'node:crypto';
import { runAddressMaintenance } from '../../../lib/addresses/maintenance';
import { findActiveWatchers } from '../../../lib/addresses/watchers';
import { putAddressChange } from '../../../lib/store/addresses';
import { writeItems } from '../../../lib/store/batch';
import { tableName } from '../../../lib/store/client';
import { originOf, recordEndpointOutcome, toEndpointHealth } from '../../../lib/store/endpoint-health';
import { getItem } from '../../../lib/store/items';
import { endpointHealthKey, purgeJobKey, webhookAddressKey } from '../../../lib/store/table';
import { headWrites, watcherWrites } from '../../../lib/store/watch-index';
import { deleteWebhook } from '../../../lib/webhooks/webhooks';
import { createWatchingWebhook, headsOf, itemsNaming, maintainUntilPurged, randomAddresses, scanTable } from '../../support/address-store';
import { CHAIN, LEASE_SECONDS, setLease, useShortLeaseStore } from '../../support/address-changes';
import { randomAccount } from '../../support/factories';

// The purge of a webhook with 5 000 addresses is in purge.scale.test.ts.
useShortLeaseStore();

describe('permanent deletion during an address change', () => {
  it('purges what the change wrote and its record too, once its lease has expired', async () => {
    const account = randomAccount();
    const initial = randomAddresses(100);
    const webhook = await createWatchingWebhook(account, CHAIN, initial);
    // A change holding the lease (for another second), its record and part of its writes made.
    const adding = randomAddresses(300);
    const changeId = randomUUID();
    await putAddressChange({ id: changeId, account, webhookId: webhook.id, chainId: CHAIN, kind: 'add', addresses: adding, delta: 300, startedAt: Date.now() });
    await writeItems([
      ...adding.slice(0, 100).map((address) => ({ put: webhookAddressKey(account, webhook.id, address) })),
      ...watcherWrites(CHAIN, webhook.id, adding.slice(0, 200), 'add'),
      ...headWrites(CHAIN, adding.slice(0, 200)),
    ]);
    await setLease(account, webhook.id, { id: changeId, expiresAt: Date.now() + 1_000 });

    await deleteWebhook(account, webhook.id, { permanent: true });
    // Not before the change's lease has expired: its holder may still be writing.
    const job = await getItem({ TableName: tableName(), Key: purgeJobKey(webhook.id), ConsistentRead: true });
    expect(job!.notBefore).toBeGreaterThan(Date.now());

    await maintainUntilPurged();
    expect(itemsNaming(await scanTable(), webhook.id)).toEqual([]);
    expect([...(await headsOf(CHAIN, [...initial, ...adding])).keys()]).toEqual([]);
  }, 60_000);

  it('purges what a change of a webhook deleted since left, when the purge had finished before its record was found', async () => {
    // The change's record is found by the sweep after the webhook and its purge job are gone.
    const account = randomAccount();
    const webhook = await createWatchingWebhook(account, CHAIN, randomAddresses(3));
    await deleteWebhook(account, webhook.id, { permanent: true });
    await maintainUntilPurged();
    const adding = randomAddresses(40);
    await putAddressChange({
      id: randomUUID(),
      account,
      webhookId: webhook.id,
      chainId: CHAIN,
      kind: 'add',
      addresses: adding,
      delta: 40,
      startedAt: Date.now() - 10 * LEASE_SECONDS * 1000,
    });
    await writeItems([
      ...adding.map((address) => ({ put: webhookAddressKey(account, webhook.id, address) })),
      ...watcherWrites(CHAIN, webhook.id, adding, 'add'),
      ...headWrites(CHAIN, adding),
    ]);

    await runAddressMaintenance(Date.now() + 2_000); // records the purge job
    await new Promise((resolve) => setTimeout(resolve, LEASE_SECONDS * 1000 + 100));
    await maintainUntilPurged();
    expect(itemsNaming(await scanTable(), webhook.id)).toEqual([]);
    expect([...(await headsOf(CHAIN, adding)).keys()]).toEqual([]);
  }, 60_000);
});

describe('permanent deletion of a webhook whose endpoint was attempted', () => {
  it("leaves its endpoint's health, which the account's other webhooks at that origin share, to expire with the retention", async () => {
    const account = randomAccount();
    const webhook = await createWatchingWebhook(account, CHAIN, randomAddresses(3));
    const endpoint = { account, origin: originOf(webhook.url) };
    const now = Date.now();
    await recordEndpointOutcome(endpoint, toEndpointHealth(undefined), false, now);
    await deleteWebhook(account, webhook.id, { permanent: true });
    await maintainUntilPurged();
    expect(itemsNaming(await scanTable(), webhook.id)).toEqual([]);
    const health = await getItem({ TableName: tableName(), Key: endpointHealthKey(account, endpoint.origin) });
    expect(health).toMatchObject({ consecutiveFailures: 1, expiresAt: Math.floor(now / 1000) + 30 * 86_400 });
  });
});

describe('the matcher after a permanent deletion', () => {
  it('does not return a permanently deleted webhook, even before its purge has run', async () => {
    const account = randomAccount();
    const [address] = randomAddresses(1) as [string];
    const webhook = await createWatchingWebhook(account, CHAIN, [address]);
    expect((await findActiveWatchers(CHAIN, [address])).matches.get(address)).toEqual([webhook.id]);
    await deleteWebhook(account, webhook.id, { permanent: true });
    // The purge runs in the background (a scheduled function): until it does, the webhook's index entries remain.
    const { matches } = await findActiveWatchers(CHAIN, [address]);
    try {
      expect(matches.get(address)).toBeUndefined();
    } finally {
      await maintainUntilPurged();
    }
  });
});
