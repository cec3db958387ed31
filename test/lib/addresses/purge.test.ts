import { randomUUID } from 'node:crypto';
import { runAddressMaintenance } from '../../../lib/addresses/maintenance';
import { findActiveWatchers } from '../../../lib/addresses/watchers';
import { putAddressChange } from '../../../lib/store/addresses';
import { writeItems } from '../../../lib/store/batch';
import { tableName } from '../../../lib/store/client';
import { originOf, recordEndpointOutcome, toEndpointHealth } from '../../../lib/store/endpoint-health';
import { getItem, queryAllItems, updateItem } from '../../../lib/store/items';
import { endpointHealthKey, PURGES_PARTITION, purgeJobKey, watcherKey, watchHeadKey, webhookAddressKey, webhookKey } from '../../../lib/store/table';
import { headWrites, watcherWrites } from '../../../lib/store/watch-index';
import { deleteWebhook, getWebhook } from '../../../lib/webhooks/webhooks';
import {
  rewriteHeads,
  countAddressItems,
  createWatchingWebhook,
  headsOf,
  itemsNaming,
  randomAddresses,
  scanTable,
} from '../../support/address-store';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount } from '../../support/factories';

const LEASE_SECONDS = 1;
useEmbeddedStore({ LEASE_SECONDS: String(LEASE_SECONDS) });

const CHAIN = '43114';

/** Maintenance passes (short ones, as the scheduled function and npm start's loop run them) until no purge job is left. */
async function maintainUntilPurged(): Promise<number> {
  let passes = 0;
  const deadline = Date.now() + 60_000;
  for (;;) {
    passes += 1;
    await runAddressMaintenance(Date.now() + 2_000);
    const { items: jobs } = await queryAllItems({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': PURGES_PARTITION },
      ConsistentRead: true,
    });
    if (jobs.length === 0) return passes;
    if (Date.now() > deadline) throw new Error(`purge jobs left after a minute: ${JSON.stringify(jobs)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('permanent deletion of a webhook with 5000 addresses', () => {
  it('leaves nothing of it once maintenance has run, and the index of what others still watch', async () => {
    const account = randomAccount();
    const addresses = randomAddresses(5000);
    const [shared] = addresses as [string];
    const unique = addresses.slice(1);
    const deleted = await createWatchingWebhook(account, CHAIN, addresses);
    const otherAccount = randomAccount();
    const ownOfOther = randomAddresses(1)[0]!;
    const other = await createWatchingWebhook(otherAccount, CHAIN, [shared, ownOfOther]);
    // The shared head holds both as saved watchers: the purge must void that copy.
    await rewriteHeads(CHAIN, [shared]);
    await findActiveWatchers(CHAIN, [shared]);
    expect((await headsOf(CHAIN, [shared])).get(shared)?.watchers).toBeDefined();
    expect(itemsNaming(await scanTable(), deleted.id).length).toBe(2 + 5000 + 5000); // webhook, pointer, addresses, watchers

    const shown = await deleteWebhook(account, deleted.id, { permanent: true });
    expect(shown.id).toBe(deleted.id);
    await expect(getWebhook(account, deleted.id)).rejects.toMatchObject({ statusCode: 404 });
    expect(await getItem({ TableName: tableName(), Key: purgeJobKey(deleted.id), ConsistentRead: true })).toMatchObject({ ready: true });

    const passes = await maintainUntilPurged();
    expect(passes).toBeGreaterThanOrEqual(1);

    const items = await scanTable();
    expect(itemsNaming(items, deleted.id)).toEqual([]);
    expect(await countAddressItems(account, deleted.id)).toBe(0);
    // Heads of the addresses only it watched are gone; the shared one stays, with the other's watcher.
    expect([...(await headsOf(CHAIN, unique)).keys()]).toEqual([]);
    const remainingHeads = await headsOf(CHAIN, [shared, ownOfOther]);
    expect([...remainingHeads.keys()].sort()).toEqual([shared, ownOfOther].sort());
    const watchItems = items.filter((item) => String(item.pk).startsWith(`WATCH#${CHAIN}#`));
    const keyText = ({ pk, sk }: { pk: string; sk: string }) => `${pk} ${sk}`;
    expect(watchItems.map((item) => keyText(item as { pk: string; sk: string })).sort()).toEqual(
      [
        watchHeadKey(CHAIN, shared),
        watcherKey(CHAIN, shared, other.id),
        watchHeadKey(CHAIN, ownOfOther),
        watcherKey(CHAIN, ownOfOther, other.id),
      ]
        .map(keyText)
        .sort(),
    );
    const { matches } = await findActiveWatchers(CHAIN, [...addresses, ownOfOther]);
    expect([...matches.keys()].sort()).toEqual([shared, ownOfOther].sort());
    expect(matches.get(shared)).toEqual([other.id]);
  }, 120_000);
});

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
    await updateItem({
      TableName: tableName(),
      Key: webhookKey(account, webhook.id),
      UpdateExpression: 'SET addressLease = :lease',
      ExpressionAttributeValues: { ':lease': { id: changeId, expiresAt: Date.now() + 1_000 } },
    });

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
    await recordEndpointOutcome(endpoint, toEndpointHealth(undefined), { delivered: false, fast: false, slowUntil: now }, now);
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
