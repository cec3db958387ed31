/**
 * Limits per account: how many webhooks it has and how many addresses they watch in all. Both are
 * counted in the account's usage item before the writes they limit (a webhook's slot before its
 * items, a change's addresses before its first write), and given back when the purge of a webhook
 * deleted for good has removed its addresses. A count left by a creation that failed or was cut off is found and dropped when it would
 * refuse a call.
 */
import { runtimeConfig } from '../config/runtime';
import { BadRequest, ServiceUnavailable } from '../errors';
import type { AddressChange } from '../store/addresses';
import {
  addWebhookAddressChange,
  addWebhookUsage,
  claimLeftoverCheck,
  createAccountUsage,
  getAccountUsage,
  removeWebhookUsage,
  type AccountUsage,
  webhooksNotGone,
} from '../store/account-usage';
import { getWebhookItem } from '../store/webhooks';
import { uuidv7Time } from '../uuid';

const limits = () => runtimeConfig().accountLimits;

/**
 * Longer than any creation takes (a Lambda's is bounded by its timeout): a webhook or API key counted
 * this long ago whose item does not exist was never created (its creation was cut off between the
 * two writes), or was deleted with its count left behind.
 */
export const CREATION_GRACE_MS = 15 * 60_000;

/** Attempts at a count that concurrent calls keep changing, before answering 503. */
export const ATTEMPTS = 5;

const tooManyWebhooks = (usage: AccountUsage, limit: number) =>
  new BadRequest(
    `Too many webhooks: the account has ${usage.webhookCount} (active and inactive), its limit is ${limit} webhooks per account; ` +
      'delete one for good (DELETE /v1/webhooks/{id}?permanent=true) to create another: its slot is freed once its addresses are purged, in the background',
  );

const tooManyAddresses = (field: string, total: number, limit: number, outcome: string) =>
  new BadRequest(
    `Invalid body field ${field}: the account's webhooks would watch ${total} addresses in all, over its limit of ${limit} addresses per account; ${outcome}`,
  );

/**
 * Counts a new webhook and its addresses in its account, or refuses it (400) when the account has
 * its limit of webhooks or no room for the addresses.
 */
export async function countNewWebhook(account: string, webhookId: string, addresses: number): Promise<void> {
  let leftoversDropped = false;
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const { webhooksPerAccount, addressesPerAccount } = limits();
    const entry = { addresses, change: '' };
    if (await addWebhookUsage(account, webhookId, entry, { maxWebhooks: webhooksPerAccount, maxAddresses: addressesPerAccount })) return;
    const usage = await getAccountUsage(account);
    if (!usage) {
      await createAccountUsage(account);
      continue;
    }
    if (usage.webhooks[webhookId]) return; // counted by a first try whose answer was lost
    const full = usage.webhookCount >= webhooksPerAccount;
    if (!full && usage.addressCount + addresses <= addressesPerAccount) continue; // room was freed meanwhile
    if (!leftoversDropped && (await dropLeftovers(account, usage)) > 0) {
      leftoversDropped = true;
      continue;
    }
    if (full) throw tooManyWebhooks(usage, webhooksPerAccount);
    throw tooManyAddresses('metadata.addresses', usage.addressCount + addresses, addressesPerAccount, 'the webhook was not created');
  }
  throw new ServiceUnavailable();
}

/** A creation that failed: its count goes unless the webhook's item was written after all. */
export async function uncountUnstoredWebhook(account: string, webhookId: string): Promise<void> {
  if (!(await getWebhookItem(account, webhookId))) await uncountWebhook(account, webhookId);
}

/** Gives back the slot and addresses of a webhook deleted for good, once its purge has removed its addresses. */
export async function uncountWebhook(account: string, webhookId: string): Promise<void> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const entry = (await getAccountUsage(account))?.webhooks[webhookId];
    if (!entry || (await removeWebhookUsage(account, webhookId, entry))) return;
  }
  // Concurrent calls kept moving the entry: it is dropped as a leftover when it would refuse a call.
}

/**
 * Counts a change of a webhook's addresses in its account before the change writes anything, once
 * however often it is resumed. Returns the refusal (400) when an add would take the account over its
 * limit, or when the webhook, no longer counted, would take it over its limit of webhooks: the change
 * must then write nothing. `webhookAddresses`: what the webhook has now. `resumed`: the change was
 * recorded by a holder that stopped, and may have written part of its addresses if it was counted.
 */
export async function countAddressChange(
  change: AddressChange,
  webhookAddresses: number,
  { resumed = false } = {},
): Promise<BadRequest | undefined> {
  const { account, webhookId } = change;
  const { webhooksPerAccount: maxWebhooks, addressesPerAccount } = limits();
  const maxAddresses = change.delta > 0 ? addressesPerAccount : undefined;
  let leftoversDropped = false;
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    if (await addWebhookAddressChange(account, webhookId, { changeId: change.id, delta: change.delta }, maxAddresses)) return undefined;
    const usage = await getAccountUsage(account);
    if (!usage) {
      await createAccountUsage(account);
      continue;
    }
    const entry = usage.webhooks[webhookId];
    if (entry?.change === change.id) return undefined;
    // A webhook not counted (dropped as a leftover while its creation was slow, say) is counted as it now is.
    const adding = entry ? change.delta : webhookAddresses + change.delta;
    if (!entry) {
      const counted = { addresses: adding, change: change.id };
      // Its entry may have gone after this change was counted and began writing: what it wrote is completed, whatever the limits.
      if (await addWebhookUsage(account, webhookId, counted, resumed ? {} : { maxWebhooks, maxAddresses })) return undefined;
      if (resumed) continue; // counted meanwhile by another call
    }
    const overWebhooks = !entry && usage.webhookCount >= maxWebhooks;
    const overAddresses = maxAddresses !== undefined && usage.addressCount + adding > maxAddresses;
    if (!overWebhooks && !overAddresses) continue; // room was freed meanwhile
    if (!leftoversDropped && (await dropLeftovers(account, usage)) > 0) {
      leftoversDropped = true;
      continue;
    }
    if (overWebhooks) return tooManyWebhooks(usage, maxWebhooks);
    return tooManyAddresses('addresses', usage.addressCount + adding, maxAddresses!, 'nothing was added');
  }
  throw new ServiceUnavailable();
}

/** How often an account's counts are checked for leftovers at most. */
const LEFTOVER_CHECK_INTERVAL_MS = 60_000;

/**
 * Stops counting webhooks counted long ago whose item does not exist, nor a purge of their addresses
 * (a webhook deleted for good stays counted until purged); returns how many.
 */
async function dropLeftovers(account: string, usage: AccountUsage): Promise<number> {
  const now = Date.now();
  const old = Object.keys(usage.webhooks).filter((id) => uuidv7Time(id) < now - CREATION_GRACE_MS);
  if (old.length === 0 || !(await claimLeftoverCheck(account, now, LEFTOVER_CHECK_INTERVAL_MS))) return 0;
  const existing = await webhooksNotGone(account, old);
  let dropped = 0;
  for (const id of old.filter((id) => !existing.has(id))) {
    if (await removeWebhookUsage(account, id, usage.webhooks[id]!)) dropped += 1;
  }
  return dropped;
}
