import { findActiveWatchers } from '../../../lib/addresses/watchers';
import { rewriteHeads, createWatchingWebhook, randomAddresses, useStoreWithFreshChains, watcherIds as ids } from '../../support/address-store';
import { randomAccount } from '../../support/factories';

// The scale tier (docs/testing.md): lookups of many addresses and of many watchers. The other findActiveWatchers tests are in watchers.test.ts.
const freshChain = useStoreWithFreshChains();

describe('findActiveWatchers', () => {
  it('reads the heads of 5000 asked addresses in ceil(5000/100) = 50 batch gets', async () => {
    const chain = freshChain();
    const account = randomAccount();
    const asked = randomAddresses(5000);
    expect(asked).toHaveLength(5000);
    const watched = asked.filter((_, index) => index % 50 === 7); // 100 of them, spread out
    const webhook = await createWatchingWebhook(account, chain, watched);

    const first = await findActiveWatchers(chain, asked);
    expect(first.reads).toEqual({ batchGets: 50, watcherQueries: 100, inactiveQueries: 1 });
    expect([...first.matches.keys()].sort()).toEqual([...watched].sort());
    for (const address of watched) expect(ids(first.matches.get(address))).toEqual([webhook.id]);

    // Saved watchers: the same lookup then costs only the batch gets and the inactive query.
    await first.saved;
    await rewriteHeads(chain, watched);
    await (await findActiveWatchers(chain, asked)).saved;
    const saved = await findActiveWatchers(chain, asked);
    expect(saved.reads).toEqual({ batchGets: 50, watcherQueries: 0, inactiveQueries: 1 });
    expect(saved.matches.size).toBe(100);

    // One more asked address is one more batch get; repeats and other spellings of the same ones are not.
    const more = await findActiveWatchers(chain, [...asked, ...asked.slice(0, 500).map((address) => address.toUpperCase().replace('0X', '0x')), randomAddresses(1)[0]!]);
    expect(more.reads.batchGets).toBe(51);
  }, 60_000);

  it('returns all 300 watchers of an address, queried and then saved', async () => {
    const chain = freshChain();
    const [address, other] = randomAddresses(2) as [string, string];
    const accounts = [randomAccount(), randomAccount(), randomAccount()];
    const expected: string[] = [];
    for (let start = 0; start < 300; start += 25) {
      const created = await Promise.all(
        Array.from({ length: 25 }, async (_, offset) => {
          const account = accounts[(start + offset) % accounts.length]!;
          return (await createWatchingWebhook(account, chain, [address, other])).id;
        }),
      );
      expected.push(...created);
    }
    expected.sort();

    const queried = await findActiveWatchers(chain, [address]);
    expect(ids(queried.matches.get(address))).toEqual(expected);
    expect(queried.reads.watcherQueries).toBeGreaterThanOrEqual(1);

    await queried.saved;
    await rewriteHeads(chain, [address]);
    await (await findActiveWatchers(chain, [address])).saved;
    const saved = await findActiveWatchers(chain, [address, other]);
    expect(saved.reads.watcherQueries).toBe(1); // only `other`, whose head was not aged
    expect(ids(saved.matches.get(address))).toEqual(expected);
    expect(ids(saved.matches.get(other))).toEqual(expected);
  }, 60_000);
});
