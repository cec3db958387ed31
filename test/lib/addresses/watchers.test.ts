import { addAddresses, removeAddresses } from '../../../lib/addresses/addresses';
import { findActiveWatchers } from '../../../lib/addresses/watchers';
import { updateWebhook, deleteWebhook } from '../../../lib/webhooks/webhooks';
import { rewriteHeads, createWatchingWebhook, headsOf, randomAddresses, useStoreWithFreshChains, watcherIds as ids } from '../../support/address-store';
import { randomAccount } from '../../support/factories';

// The lookups of 5 000 addresses and of an address's 300 watchers are in watchers.scale.test.ts.
const freshChain = useStoreWithFreshChains();

describe('findActiveWatchers', () => {
  it('finds every active watcher of the asked addresses, on that chain only', async () => {
    const chain = freshChain();
    const otherChain = freshChain();
    const [shared, onlyFirst, unwatched, otherChainOnly] = randomAddresses(4) as [string, string, string, string];
    const alice = randomAccount();
    const bob = randomAccount();
    const first = await createWatchingWebhook(alice, chain, [shared, onlyFirst]);
    const second = await createWatchingWebhook(alice, chain, [shared]);
    const bobs = await createWatchingWebhook(bob, chain, [shared]);
    // The same addresses watched on another chain are not this chain's watchers.
    await createWatchingWebhook(alice, otherChain, [shared, onlyFirst, otherChainOnly]);

    // Asked in any case and more than once: addresses are matched lower-cased, once.
    const { matches, reads } = await findActiveWatchers(chain, [
      shared.toUpperCase().replace('0X', '0x'),
      shared,
      onlyFirst,
      unwatched,
      otherChainOnly,
    ]);

    expect([...matches.keys()].sort()).toEqual([shared, onlyFirst].sort());
    expect(ids(matches.get(shared))).toEqual([first.id, second.id, bobs.id].sort());
    expect(ids(matches.get(onlyFirst))).toEqual([first.id]);
    expect(matches.has(unwatched)).toBe(false);
    expect(matches.has(otherChainOnly)).toBe(false);
    expect(reads).toEqual({ batchGets: 1, watcherQueries: 2, inactiveQueries: 1 });
  });

  it('drops an inactive webhook, at no watcher query once the watchers are saved in the head', async () => {
    const chain = freshChain();
    const [both, inactiveOnly] = randomAddresses(2) as [string, string];
    const account = randomAccount();
    const active = await createWatchingWebhook(account, chain, [both]);
    const inactive = await createWatchingWebhook(account, chain, [both, inactiveOnly]);
    await updateWebhook(account, inactive.id, { status: 'inactive' });

    // Heads with no saved watchers: the watchers are queried.
    const fresh = await findActiveWatchers(chain, [both, inactiveOnly]);
    expect(ids(fresh.matches.get(both))).toEqual([active.id]);
    expect(fresh.matches.has(inactiveOnly)).toBe(false);
    expect(fresh.reads.watcherQueries).toBe(2);
    await fresh.saved;

    // Heads just rewritten: the first lookup queries and saves the watchers, the next reads only the heads.
    await rewriteHeads(chain, [both, inactiveOnly]);
    const saving = await findActiveWatchers(chain, [both, inactiveOnly]);
    expect(saving.reads.watcherQueries).toBe(2);
    expect(ids(saving.matches.get(both))).toEqual([active.id]);
    await saving.saved;

    const saved = await findActiveWatchers(chain, [both, inactiveOnly]);
    expect(saved.reads).toEqual({ batchGets: 1, watcherQueries: 0, inactiveQueries: 1 });
    expect(ids(saved.matches.get(both))).toEqual([active.id]);
    expect(saved.matches.has(inactiveOnly)).toBe(false);
    // The head of an address only an inactive webhook watches stays: the webhook may come back.
    expect((await headsOf(chain, [inactiveOnly])).has(inactiveOnly)).toBe(true);

    // Reactivated (and deactivated again, through DELETE): back at once, still without a watcher query.
    await updateWebhook(account, inactive.id, { status: 'active' });
    const reactivated = await findActiveWatchers(chain, [both, inactiveOnly]);
    expect(reactivated.reads.watcherQueries).toBe(0);
    expect(ids(reactivated.matches.get(both))).toEqual([active.id, inactive.id].sort());
    expect(ids(reactivated.matches.get(inactiveOnly))).toEqual([inactive.id]);

    await deleteWebhook(account, inactive.id, { permanent: false });
    const deactivated = await findActiveWatchers(chain, [both, inactiveOnly]);
    expect(deactivated.reads.watcherQueries).toBe(0);
    expect(ids(deactivated.matches.get(both))).toEqual([active.id]);
    expect(deactivated.matches.has(inactiveOnly)).toBe(false);
  });

  it('no longer matches a removed address, and the lookup deletes its head', async () => {
    const chain = freshChain();
    const account = randomAccount();
    const [removed, kept, removedSaved] = randomAddresses(3) as [string, string, string];
    const webhook = await createWatchingWebhook(account, chain, [removed, kept, removedSaved]);
    // One of them has its watchers saved in its head before the removal: the removal must void them.
    await rewriteHeads(chain, [removedSaved]);
    await (await findActiveWatchers(chain, [removedSaved])).saved;
    expect((await headsOf(chain, [removedSaved])).get(removedSaved)?.watchers).toBeDefined();
    expect(ids((await findActiveWatchers(chain, [removedSaved])).matches.get(removedSaved))).toEqual([webhook.id]);

    await removeAddresses(account, webhook.id, { addresses: [removed, removedSaved] });
    expect([...(await headsOf(chain, [removed, removedSaved])).keys()].sort()).toEqual([removed, removedSaved].sort()); // still there until a lookup

    const { matches, saved } = await findActiveWatchers(chain, [removed, kept, removedSaved]);
    await saved;
    expect([...matches.keys()]).toEqual([kept]);
    expect([...(await headsOf(chain, [removed, kept, removedSaved])).keys()]).toEqual([kept]);

    // Added back: watched again (a new head).
    await addAddresses(account, webhook.id, { addresses: [removed] });
    expect(ids((await findActiveWatchers(chain, [removed])).matches.get(removed))).toEqual([webhook.id]);
  });

  it('keeps the head of an address still watched by another webhook when one stops watching it', async () => {
    const chain = freshChain();
    const account = randomAccount();
    const [address] = randomAddresses(1) as [string];
    const leaving = await createWatchingWebhook(account, chain, [address]);
    const staying = await createWatchingWebhook(account, chain, [address]);
    await rewriteHeads(chain, [address]);
    await (await findActiveWatchers(chain, [address])).saved; // saves both

    await removeAddresses(account, leaving.id, { addresses: [address] });
    const { matches } = await findActiveWatchers(chain, [address]);
    expect(ids(matches.get(address))).toEqual([staying.id]);
    expect((await headsOf(chain, [address])).has(address)).toBe(true);
  });
});
