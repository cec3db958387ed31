/**
 * Changes to a webhook's watched addresses, exact without transactions. One change at a time per
 * webhook (a lease in the webhook's item): it reads which of its addresses are there, records what
 * it will write and by how much it moves the count, makes its writes (batch puts and deletes, all
 * idempotent), then applies the count and releases the lease in one conditional write. A change cut
 * off by a crash is completed by the next one to take the lease, or by the maintenance sweep.
 */
import { randomUUID } from 'node:crypto';
import { runtimeConfig } from '../config/runtime';
import { BadRequest, NotFound, ServiceUnavailable, webhookNotFound } from '../errors';
import {
  acquireAddressLease,
  applyAddressChange,
  deleteAddressChange,
  getAddressChange,
  getWebhookAddressState,
  presentWebhookAddresses,
  putAddressChange,
  queryWebhookAddresses,
  renewAddressLease,
  webhookAddressWrites,
  type AddressChange,
  type WebhookAddressState,
} from '../store/addresses';
import { countAddressChange } from '../limits/account-limits';
import { writeItems, type ItemWrite } from '../store/batch';
import { headWrites, watcherWrites } from '../store/watch-index';
import { FIRST_ADDRESSES_SHOWN } from '../schemas/fields';
import type { Webhook } from '../schemas/webhook';

/** What a webhook with these addresses (distinct, lower-case) shows of them. */
export const firstAddressesOf = (addresses: Iterable<string>) => [...addresses].sort().slice(0, FIRST_ADDRESSES_SHOWN);

/** Writes sent between two checks that the lease is still held (and renewals when due). */
const WRITES_PER_LEASE_CHECK = 1_500;

const leaseMs = () => runtimeConfig().leaseSeconds * 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A held lease: renewed while its holder works, and lost if another process took it over. */
class AddressLease {
  private renewedAt = Date.now();

  constructor(
    readonly account: string,
    readonly webhookId: string,
    readonly id: string,
  ) {}

  /** Renews the lease when a third of it has passed; throws when it is no longer held. */
  async keep(): Promise<void> {
    if (Date.now() - this.renewedAt < leaseMs() / 3) return;
    const now = Date.now();
    if (!(await renewAddressLease(this.account, this.webhookId, this.id, now + leaseMs()))) await lostLease(this);
    this.renewedAt = now;
  }
}

interface Held {
  lease: AddressLease;
  state: WebhookAddressState;
}

/**
 * Takes the webhook's address lease, waiting while another change holds it, until `waitUntil`.
 * Completes first whatever change was recorded and not applied: one a crashed holder left, or a
 * creation's that was cut off.
 */
async function takeLease(account: string, webhookId: string, waitUntil: number): Promise<Held | undefined> {
  const leaseId = randomUUID();
  for (;;) {
    const now = Date.now();
    const attempt = await acquireAddressLease(account, webhookId, leaseId, now, now + leaseMs());
    if ('missing' in attempt) throw webhookNotFound(webhookId);
    if ('acquired' in attempt) {
      const held = { lease: new AddressLease(account, webhookId, leaseId), state: attempt.acquired };
      held.state = await completeLeftover(held);
      return held;
    }
    if (now >= waitUntil) return undefined;
    await sleep(Math.min(Math.max(attempt.heldUntil - now, 0), 50 + Math.random() * 100, waitUntil - now));
  }
}

/** Completes the change recorded by a holder that stopped before applying it, if there is one. */
async function completeLeftover({ lease, state }: Held): Promise<WebhookAddressState> {
  const leftover = await getAddressChange(lease.account, lease.webhookId);
  if (!leftover) return state;
  let completed = state;
  if (state.appliedChange !== leftover.id) {
    // Counted in the account before its first write: one refused now was never counted, so wrote nothing
    // (one that was, then lost its webhook's count, is counted again whatever the limits and completed).
    if (leftover.delta !== 0 && (await countAddressChange(leftover, state.addressCount, { resumed: true }))) {
      await deleteAddressChange(leftover);
      return state;
    }
    await writeChange(leftover, lease);
    const firstAddresses = await firstAddressesAfter(state, leftover);
    completed =
      (await applyAddressChange(lease.account, lease.webhookId, lease.id, { change: leftover, firstAddresses, release: false })) ??
      (await lostLease(lease));
  }
  await deleteAddressChange(leftover);
  return completed;
}

/** The lease was taken over, or the webhook deleted while the change ran (then it is a 404). */
async function lostLease({ account, webhookId }: AddressLease): Promise<never> {
  if (!(await getWebhookAddressState(account, webhookId))) throw webhookNotFound(webhookId);
  throw new ServiceUnavailable();
}

/**
 * What a change writes, in two phases: the webhook's own address items and the watcher items, then
 * the heads. A head is written only once its watcher items are: the matcher and the purge delete a
 * head they find without watchers, and could otherwise delete one whose watcher is still on its way.
 */
export function changeWrites(change: Pick<AddressChange, 'account' | 'webhookId' | 'chainId' | 'kind' | 'addresses'>): ItemWrite[][] {
  const own = webhookAddressWrites(change.account, change.webhookId, change.addresses, change.kind);
  return [[...own, ...watcherWrites(change.chainId, change.webhookId, change.addresses, change.kind)], headWrites(change.chainId, change.addresses)];
}

async function writeChange(change: AddressChange, lease: AddressLease): Promise<void> {
  for (const writes of changeWrites(change)) {
    for (let start = 0; start < writes.length; start += WRITES_PER_LEASE_CHECK) {
      await lease.keep();
      await writeItems(writes.slice(start, start + WRITES_PER_LEASE_CHECK));
    }
  }
}

/**
 * The webhook's first addresses after the change, from those it shows now: an add's are among the
 * shown and the added; a remove that takes shown ones away from a webhook with more needs a read.
 */
async function firstAddressesAfter(state: WebhookAddressState, change: AddressChange): Promise<string[]> {
  const shown = state.webhook.metadata.addresses;
  if (change.kind === 'add') return firstAddressesOf(new Set([...shown, ...change.addresses]));
  const removed = new Set(change.addresses);
  const remaining = shown.filter((address) => !removed.has(address));
  if (remaining.length === shown.length || state.addressCount + change.delta <= remaining.length) return remaining;
  const { addresses } = await queryWebhookAddresses(change.account, change.webhookId, FIRST_ADDRESSES_SHOWN);
  return addresses;
}

/** How long a call waits for another change of the same webhook's addresses to finish. */
const WAIT_FOR_LEASE_MS = 8_000;

/**
 * Adds or removes addresses of an account's webhook; answers with the webhook as it then is.
 * Addresses already there (for an add) or absent (for a remove) change nothing.
 */
export async function changeAddresses(account: string, webhookId: string, kind: 'add' | 'remove', addresses: string[]): Promise<Webhook> {
  const held = await takeLease(account, webhookId, Date.now() + WAIT_FOR_LEASE_MS);
  if (!held) {
    throw new ServiceUnavailable(
      Math.ceil(leaseMs() / 1000),
      `Another change to webhook ${webhookId}'s addresses is under way: retry after the time in the Retry-After header`,
    );
  }
  const { lease, state } = held;
  let change: AddressChange | undefined;
  try {
    const present = await presentWebhookAddresses(account, webhookId, addresses);
    const changing = addresses.filter((address) => present.has(address) === (kind === 'remove'));
    const limit = runtimeConfig().addressLimits.perWebhook;
    if (kind === 'add' && state.addressCount + changing.length > limit) {
      throw new BadRequest(
        `Invalid body field addresses: the webhook would watch ${state.addressCount + changing.length} addresses, over its limit of ${limit}; nothing was added`,
      );
    }
    if (changing.length === 0) return await release(held, undefined, state.webhook.metadata.addresses);
    change = {
      id: lease.id,
      account,
      webhookId,
      chainId: state.webhook.chainId,
      kind,
      addresses: changing,
      delta: kind === 'add' ? changing.length : -changing.length,
      startedAt: Date.now(),
    };
    await putAddressChange(change);
    const refusal = await countAddressChange(change, state.addressCount);
    if (refusal) {
      await deleteAddressChange(change);
      change = undefined;
      throw refusal;
    }
    await writeChange(change, lease);
    const webhook = await release(held, change, await firstAddressesAfter(state, change));
    await deleteAddressChange(change);
    return webhook;
  } catch (error) {
    // Nothing written yet: free the lease at once rather than make the next call wait for it to expire
    // (if that fails too, it expires); the caller hears of the first error.
    if (!change) {
      await applyAddressChange(account, webhookId, lease.id, { firstAddresses: state.webhook.metadata.addresses, release: true }).catch(
        () => undefined,
      );
    }
    throw error;
  }
}

async function release({ lease }: Held, change: AddressChange | undefined, firstAddresses: string[]): Promise<Webhook> {
  const released = await applyAddressChange(lease.account, lease.webhookId, lease.id, { change, firstAddresses, release: true });
  return released?.webhook ?? lostLease(lease);
}

/**
 * For the maintenance sweep: completes a recorded change whose holder is gone, by taking the
 * webhook's lease without waiting (which completes what an expired holder left) and releasing it.
 * 'held' when the lease is held: the change is still under way.
 */
export async function completeInterruptedChange(change: AddressChange): Promise<'completed' | 'held' | 'webhook deleted'> {
  try {
    const held = await takeLease(change.account, change.webhookId, 0);
    if (!held) return 'held';
    await applyAddressChange(change.account, change.webhookId, held.lease.id, {
      firstAddresses: held.state.webhook.metadata.addresses,
      release: true,
    });
    // takeLease completed it if its holder had stopped; a record left after its change was applied goes too.
    await deleteAddressChange(change);
    return 'completed';
  } catch (error) {
    if (error instanceof NotFound) return 'webhook deleted';
    throw error;
  }
}
