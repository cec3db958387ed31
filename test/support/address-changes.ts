// Address changes cut off by a crash, their completion, and the short-lease store their tests and the purge tests run on.
import { randomUUID } from 'node:crypto';
import { runAddressMaintenance } from '../../lib/addresses/maintenance';
import { findActiveWatchers } from '../../lib/addresses/watchers';
import { getAddressChange, getWebhookAddressState, putAddressChange, type AddressChange } from '../../lib/store/addresses';
import { writeItems, type ItemWrite } from '../../lib/store/batch';
import { tableName } from '../../lib/store/client';
import { updateItem } from '../../lib/store/items';
import { webhookAddressKey, webhookKey } from '../../lib/store/table';
import { headWrites, watcherWrites } from '../../lib/store/watch-index';
import { countAddressItems } from './address-store';
import { useEmbeddedStore } from './embedded-store';

export const LEASE_SECONDS = 1;

/** The embedded store with a short lease: a crashed holder's lease expires, and maintenance takes up its change, within seconds. */
export const useShortLeaseStore = () => useEmbeddedStore({ LEASE_SECONDS: String(LEASE_SECONDS) });

export const CHAIN = '43114';

/** Old enough for the maintenance sweep (it takes up records started over two leases ago). */
export const longAgo = () => Date.now() - 3 * LEASE_SECONDS * 1000;

/**
 * What a holder that crashed part-way through its change leaves: its record, some of its writes (the
 * first `written` addresses' items and index entries), and its lease, expired at `leaseExpiresAt`.
 */
export async function crashedChange(
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

export const setLease = (account: string, webhookId: string, lease: { id: string; expiresAt: number }) =>
  updateItem({
    TableName: tableName(),
    Key: webhookKey(account, webhookId),
    UpdateExpression: 'SET addressLease = :lease',
    ExpressionAttributeValues: { ':lease': lease },
  });

export async function addressState(account: string, webhookId: string) {
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

export async function watchedBy(webhookId: string, addresses: string[]): Promise<string[]> {
  const { matches } = await findActiveWatchers(CHAIN, addresses);
  return addresses.filter((address) => matches.get(address)?.includes(webhookId));
}

/** Maintenance passes until one completes no change. */
export async function maintainUntilQuiet(): Promise<number> {
  let completed = 0;
  for (let pass = 0; pass < 10; pass += 1) {
    const { changesCompleted } = await runAddressMaintenance(Date.now() + 10_000);
    if (changesCompleted === 0) return completed;
    completed += changesCompleted;
  }
  throw new Error('maintenance kept completing changes');
}
