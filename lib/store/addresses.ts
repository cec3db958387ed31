import type { Webhook } from '../schemas/webhook';
import { tableName } from './client';
import { unlessConditionFails } from './conditional-write';
import { readItems, type ItemWrite } from './batch';
import { deleteItem, getItem, putItem, queryItems, queryUntilFull, updateItem, type Item } from './items';
import {
  ADDRESS_CHANGES_INDEX_PARTITION,
  addressChangeIndexKey,
  addressChangeKey,
  addressOfSortKey,
  GSI1,
  WEBHOOK_ADDRESS_SORT_KEY_PREFIX,
  webhookAddressKey,
  webhookKey,
} from './table';
import { toWebhook } from './webhooks';
import { leaseHeldBy, leaseRemoval, renewLease, takeLease, type LeaseSite } from './leases';

/**
 * A change to one webhook's addresses, recorded before its first write so that a change cut off by
 * a crash can be completed: its writes are idempotent, and `delta` moves the count exactly once.
 */
export interface AddressChange {
  id: string;
  account: string;
  webhookId: string;
  chainId: string;
  kind: 'add' | 'remove';
  /** What the change writes: for an add, the addresses that were not there; for a remove, those that were. */
  addresses: string[];
  /** How much the change moves the webhook's address count when it is applied. */
  delta: number;
  startedAt: number;
}

const ADDRESS_BYTES = 20;

/** 20 bytes an address: a change of 10 000 addresses is a 200 KB item, under DynamoDB's 400 KB. */
function packAddresses(addresses: string[]): Uint8Array {
  const packed = Buffer.alloc(addresses.length * ADDRESS_BYTES);
  addresses.forEach((address, index) => packed.write(address.slice(2), index * ADDRESS_BYTES, 'hex'));
  return packed;
}

function unpackAddresses(packed: Uint8Array): string[] {
  const bytes = Buffer.from(packed);
  const addresses: string[] = [];
  for (let offset = 0; offset < bytes.length; offset += ADDRESS_BYTES) {
    addresses.push(`0x${bytes.subarray(offset, offset + ADDRESS_BYTES).toString('hex')}`);
  }
  return addresses;
}

function addressChangeItem(change: AddressChange) {
  return {
    ...addressChangeKey(change.account, change.webhookId),
    ...addressChangeIndexKey(change.startedAt, change.id),
    changeId: change.id,
    account: change.account,
    webhookId: change.webhookId,
    chainId: change.chainId,
    kind: change.kind,
    addresses: packAddresses(change.addresses),
    delta: change.delta,
    startedAt: change.startedAt,
  };
}

function toAddressChange(item: Record<string, any>): AddressChange {
  return {
    id: item.changeId,
    account: item.account,
    webhookId: item.webhookId,
    chainId: item.chainId,
    kind: item.kind,
    addresses: unpackAddresses(item.addresses),
    delta: item.delta,
    startedAt: item.startedAt,
  };
}

export async function putAddressChange(change: AddressChange): Promise<void> {
  await putItem({ TableName: tableName(), Item: addressChangeItem(change) });
}

export async function getAddressChange(account: string, webhookId: string): Promise<AddressChange | undefined> {
  const item = await getItem({ TableName: tableName(), Key: addressChangeKey(account, webhookId), ConsistentRead: true });
  return item && toAddressChange(item);
}

/** Deletes the record if it is still this change's: a later change may have put its own. */
export async function deleteAddressChange(change: Pick<AddressChange, 'account' | 'webhookId' | 'id'>): Promise<void> {
  await unlessConditionFails(
    deleteItem({
      TableName: tableName(),
      Key: addressChangeKey(change.account, change.webhookId),
      ConditionExpression: 'changeId = :id',
      ExpressionAttributeValues: { ':id': change.id },
    }),
  );
}

/** Change records started before `startedBefore`, oldest first: those a crash may have cut off. */
export async function addressChangesStartedBefore(startedBefore: number, limit: number): Promise<AddressChange[]> {
  const page = await queryItems({
    TableName: tableName(),
    IndexName: GSI1.indexName,
    KeyConditionExpression: `${GSI1.partitionKey} = :pk AND ${GSI1.sortKey} < :before`,
    ExpressionAttributeValues: { ':pk': ADDRESS_CHANGES_INDEX_PARTITION, ':before': addressChangeIndexKey(startedBefore, '').gsi1sk },
    Limit: limit,
  });
  return page.items.map(toAddressChange);
}

/** What the webhook item says about its addresses, beside the webhook itself. */
export interface WebhookAddressState {
  webhook: Webhook;
  addressCount: number;
  /** The last change whose delta is in `addressCount`. */
  appliedChange?: string;
  lease?: { id: string; expiresAt: number };
}

function toAddressState(item: Record<string, any>): WebhookAddressState {
  return {
    webhook: toWebhook(item),
    addressCount: item.addressCount ?? 0,
    appliedChange: item.appliedAddressChange,
    lease: item.addressLease,
  };
}

export type LeaseAttempt =
  | { acquired: WebhookAddressState }
  | { heldUntil: number }
  | { missing: true };

/** The webhook's address lease: one change to its addresses at a time, kept in the webhook's item. */
const addressLeaseSite = (account: string, id: string): LeaseSite => ({
  key: webhookKey(account, id),
  holder: 'addressLease.id',
  expiresAt: 'addressLease.expiresAt',
  kept: 'in an item',
});

/**
 * Takes the webhook's address lease, so that what a change reads before writing still holds when it
 * writes. An expired lease is taken over.
 */
export async function acquireAddressLease(account: string, id: string, leaseId: string, now: number, expiresAt: number): Promise<LeaseAttempt> {
  const updated = await takeLease(addressLeaseSite(account, id), leaseId, expiresAt, now);
  if (updated) return { acquired: toAddressState(updated) };
  const current = await getItem({ TableName: tableName(), Key: webhookKey(account, id), ConsistentRead: true });
  if (!current) return { missing: true };
  // Expired between the two reads: the caller tries again at once.
  return { heldUntil: addressLeaseExpiryOf(current) ?? now };
}

/** Extends the lease; false when it is no longer this holder's (taken over, or the webhook deleted). */
export async function renewAddressLease(account: string, id: string, leaseId: string, expiresAt: number): Promise<boolean> {
  return renewLease(addressLeaseSite(account, id), leaseId, expiresAt);
}

/**
 * Applies a change's delta (once: the webhook records the last change applied), sets the webhook's
 * first addresses and, with `release`, releases the lease, in one write conditional on holding the
 * lease. Undefined when the lease was lost.
 */
export async function applyAddressChange(
  account: string,
  id: string,
  leaseId: string,
  update: { change?: AddressChange; firstAddresses: string[]; release: boolean },
): Promise<WebhookAddressState | undefined> {
  const apply = update.change !== undefined;
  const set = apply
    ? 'SET addressCount = if_not_exists(addressCount, :zero) + :delta, appliedAddressChange = :change, metadata.addresses = :first'
    : 'SET metadata.addresses = :first';
  const site = addressLeaseSite(account, id);
  const held = leaseHeldBy(site, leaseId);
  const removal = leaseRemoval(site);
  const updated = await unlessConditionFails(
    updateItem({
      TableName: tableName(),
      Key: webhookKey(account, id),
      UpdateExpression: update.release ? `${set} ${removal.text}` : set,
      ConditionExpression: held.text,
      ExpressionAttributeNames: update.release ? { ...held.names, ...removal.names } : held.names,
      ExpressionAttributeValues: {
        ...held.values,
        ':first': update.firstAddresses,
        ...(apply ? { ':zero': 0, ':delta': update.change!.delta, ':change': update.change!.id } : {}),
      },
      ReturnValues: 'ALL_NEW',
    }),
  );
  return updated && toAddressState(updated);
}

export interface AddressPage {
  addresses: string[];
  /** Items DynamoDB read to answer, for the benchmark's cost figures. */
  itemsRead: number;
}

/** Up to `limit` of the webhook's addresses in address order, after `afterAddress`; read consistently. */
export async function queryWebhookAddresses(account: string, id: string, limit: number, afterAddress?: string): Promise<AddressPage> {
  const { items, itemsRead } = await queryUntilFull(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': webhookAddressKey(account, id, '').pk, ':prefix': WEBHOOK_ADDRESS_SORT_KEY_PREFIX },
      ConsistentRead: true,
      ExclusiveStartKey: afterAddress === undefined ? undefined : webhookAddressKey(account, id, afterAddress),
    },
    limit,
  );
  return { addresses: items.map((item) => addressOfSortKey(item.sk)), itemsRead };
}

/** The writes that add the webhook's address items, or remove them. */
export function webhookAddressWrites(account: string, webhookId: string, addresses: string[], kind: 'add' | 'remove'): ItemWrite[] {
  return addresses.map((address) => {
    const key = webhookAddressKey(account, webhookId, address);
    return kind === 'add' ? { put: { ...key } } : { delete: key };
  });
}

/** Which of the addresses the webhook has now (a consistent batch read, 100 a request). */
export async function presentWebhookAddresses(account: string, webhookId: string, addresses: string[]): Promise<Set<string>> {
  const keys = addresses.map((address) => webhookAddressKey(account, webhookId, address));
  const { items } = await readItems(keys, ['sk']);
  return new Set(items.map((item) => addressOfSortKey(item.sk)));
}

/** When the address lease in a webhook's item (as read or deleted) runs out; undefined when none is held. */
export const addressLeaseExpiryOf = (item: Item): number | undefined => item.addressLease?.expiresAt;

export async function getWebhookAddressState(account: string, id: string): Promise<WebhookAddressState | undefined> {
  const item = await getItem({ TableName: tableName(), Key: webhookKey(account, id), ConsistentRead: true });
  return item && toAddressState(item);
}
