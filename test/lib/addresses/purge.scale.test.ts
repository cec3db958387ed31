import { findActiveWatchers } from '../../../lib/addresses/watchers';
import { tableName } from '../../../lib/store/client';
import { getItem } from '../../../lib/store/items';
import { purgeJobKey, watcherKey, watchHeadKey } from '../../../lib/store/table';
import { deleteWebhook, getWebhook } from '../../../lib/webhooks/webhooks';
import {
  rewriteHeads,
  countAddressItems,
  createWatchingWebhook,
  headsOf,
  itemsNaming,
  maintainUntilPurged,
  randomAddresses,
  scanTable,
} from '../../support/address-store';
import { CHAIN, useShortLeaseStore } from '../../support/address-changes';
import { randomAccount } from '../../support/factories';

// The scale tier (docs/testing.md): a purge over several of its pages. The other purge tests are in purge.test.ts.
useShortLeaseStore();

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
    await (await findActiveWatchers(CHAIN, [shared])).saved;
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
