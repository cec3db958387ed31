/**
 * The account's usage item: each of its webhooks (until deleted for good) with the addresses it
 * watches, counting a change under way as made, and the totals its limits are checked against. One
 * item, so that a limit holds under concurrent calls with single-item conditional writes alone.
 */
import { tableName } from './client';
import { readItems } from './batch';
import { conditionHeld, unlessConditionFails } from './conditional-write';
import { getItem, putItem, queryAllItems, updateItem } from './items';
import { accountUsageKey, purgeJobKey, WEBHOOK_SORT_KEY_PREFIX, webhookIdOfSortKey, webhookKey } from './table';

/** One webhook's entry: its addresses once `change` (the last change counted) is made. */
export interface WebhookUsage {
  addresses: number;
  change: string;
}

export interface AccountUsage {
  webhookCount: number;
  addressCount: number;
  webhooks: Record<string, WebhookUsage>;
}

export async function getAccountUsage(account: string): Promise<AccountUsage | undefined> {
  const item = await getItem({ TableName: tableName(), Key: accountUsageKey(account), ConsistentRead: true });
  return item && { webhookCount: item.webhookCount, addressCount: item.addressCount, webhooks: item.webhooks };
}

/**
 * How many webhooks the account has, created or being created, until deleted for good and purged;
 * undefined when its usage item does not exist (an account that created none since usage was kept).
 * Eventually consistent: the item is read whole (billed by its size, some 60-100 bytes a webhook)
 * for one number.
 */
export async function countAccountWebhooks(account: string): Promise<number | undefined> {
  const item = await getItem({ TableName: tableName(), Key: accountUsageKey(account), ProjectionExpression: 'webhookCount' });
  return item?.webhookCount;
}

/** Creates the item, unless it exists, counting the webhooks the account already has (made before usage was kept). */
export async function createAccountUsage(account: string): Promise<void> {
  const { items } = await queryAllItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeNames: { '#id': 'id' },
    ExpressionAttributeValues: { ':pk': webhookKey(account, '').pk, ':prefix': WEBHOOK_SORT_KEY_PREFIX },
    ProjectionExpression: '#id, addressCount',
    ConsistentRead: true,
  });
  const webhooks: Record<string, WebhookUsage> = {};
  for (const item of items) webhooks[item.id] = { addresses: item.addressCount ?? 0, change: '' };
  const addressCount = Object.values(webhooks).reduce((sum, entry) => sum + entry.addresses, 0);
  await unlessConditionFails(
    putItem({
      TableName: tableName(),
      Item: { ...accountUsageKey(account), webhookCount: items.length, addressCount, webhooks },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

/**
 * Counts a webhook that is not counted yet, while the account has fewer than `maxWebhooks` and room
 * for its addresses under `maxAddresses` (each unchecked when absent). False when the item is missing,
 * the webhook already counted, or a limit would be passed.
 */
export async function addWebhookUsage(
  account: string,
  webhookId: string,
  entry: WebhookUsage,
  limits: { maxWebhooks?: number; maxAddresses?: number },
): Promise<boolean> {
  const conditions = ['attribute_exists(pk)', 'attribute_not_exists(webhooks.#id)'];
  const values: Record<string, unknown> = { ':entry': entry, ':one': 1, ':addresses': entry.addresses };
  if (limits.maxWebhooks !== undefined) {
    conditions.push('webhookCount < :maxWebhooks');
    values[':maxWebhooks'] = limits.maxWebhooks;
  }
  if (limits.maxAddresses !== undefined) {
    conditions.push('addressCount <= :room');
    values[':room'] = limits.maxAddresses - entry.addresses;
  }
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: accountUsageKey(account),
      UpdateExpression: 'SET webhooks.#id = :entry, webhookCount = webhookCount + :one, addressCount = addressCount + :addresses',
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: { '#id': webhookId },
      ExpressionAttributeValues: values,
    }),
  );
}

/**
 * Counts change `changeId` of a webhook's addresses (`delta`), unless it is the change last counted,
 * while the account's total stays at most `maxAddresses` (unchecked when absent). False when the
 * webhook is not counted, the change already is, or the limit would be passed.
 */
export async function addWebhookAddressChange(
  account: string,
  webhookId: string,
  change: { changeId: string; delta: number },
  maxAddresses?: number,
): Promise<boolean> {
  const values: Record<string, unknown> = { ':change': change.changeId, ':delta': change.delta };
  let condition = 'attribute_exists(webhooks.#id) AND webhooks.#id.change <> :change';
  if (maxAddresses !== undefined) {
    condition += ' AND addressCount <= :room';
    values[':room'] = maxAddresses - change.delta;
  }
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: accountUsageKey(account),
      UpdateExpression:
        'SET webhooks.#id.addresses = webhooks.#id.addresses + :delta, webhooks.#id.change = :change, addressCount = addressCount + :delta',
      ConditionExpression: condition,
      ExpressionAttributeNames: { '#id': webhookId },
      ExpressionAttributeValues: values,
    }),
  );
}

/** Stops counting the webhook, whose entry was read as `entry`; false when the entry changed since (or is gone). */
export async function removeWebhookUsage(account: string, webhookId: string, entry: WebhookUsage): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: accountUsageKey(account),
      UpdateExpression: 'SET webhookCount = webhookCount - :one, addressCount = addressCount - :addresses REMOVE webhooks.#id',
      ConditionExpression: 'webhooks.#id.addresses = :addresses AND webhooks.#id.change = :change',
      ExpressionAttributeNames: { '#id': webhookId },
      ExpressionAttributeValues: { ':one': 1, ':addresses': entry.addresses, ':change': entry.change },
    }),
  );
}

/**
 * Takes the account's turn to look for leftover counts, at most once per `intervalMs`: the look reads
 * every webhook item, which a caller at its limit must not be able to repeat at will.
 */
export async function claimLeftoverCheck(account: string, now: number, intervalMs: number): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: accountUsageKey(account),
      UpdateExpression: 'SET leftoversCheckedAt = :now',
      ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(leftoversCheckedAt) OR leftoversCheckedAt <= :since)',
      ExpressionAttributeValues: { ':now': now, ':since': now - intervalMs },
    }),
  );
}

/** Those of the account's webhooks `ids` whose item, or the purge job of their addresses, still exists. */
export async function webhooksNotGone(account: string, ids: string[]): Promise<Set<string>> {
  const { items } = await readItems(ids.flatMap((id) => [webhookKey(account, id), purgeJobKey(id)]), ['sk']);
  return new Set(items.map((item) => webhookIdOfSortKey(item.sk as string)));
}
