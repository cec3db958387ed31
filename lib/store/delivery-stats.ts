import type { AttemptFailure } from '../schemas/stats';
import { tableName } from './client';
import { conditionHeld } from './conditional-write';
import { deleteItem, queryAllItems, updateItem, type Item } from './items';
import { expiredBatches, queryTimeIndexItems, sweptForExpiry } from './messages';
import {
  accountStatsHourKey,
  hourOfStatsSortKey,
  retentionEndOf,
  STATS_EXPIRY_PARTITION,
  statsExpiryIndexKey,
  statsHourRange,
  webhookStatsHourKey,
  type TableKey,
} from './table';

export const HOUR_MS = 3_600_000;

/** What one hour's attempts came to, as its items count them. */
export interface HourCounts {
  attempts: number;
  succeeded: number;
  pending: number;
  failed: number;
  /** Attempts per latency bucket, by the bucket's name (lib/deliveries/stats.ts names them); absent buckets are zero. */
  latency: Record<string, number>;
}


export interface WebhookHour {
  /** The hour's start, ms. */
  hour: number;
  counts: HourCounts;
  /** The hour's last failed attempt. */
  lastFailure?: AttemptFailure;
}

export interface AccountHour {
  hour: number;
  counts: HourCounts;
  /** The account's webhooks with a failed attempt in the hour: all of them, or as many as addAccountHourCounts keeps. */
  failingWebhooks: string[];
}

const COUNTERS = ['attempts', 'succeeded', 'pending', 'failed'] as const;
/** Each latency bucket is a top-level number, so that ADD can count it: DynamoDB adds to no path inside a map that may not exist yet. */
const LATENCY_PREFIX = 'ms_';

/**
 * How every counts write's UpdateExpression begins (each counts at least one attempt): what the
 * bench's cost figure tells the statistics' writes by.
 */
export const STATS_COUNTS_UPDATE_START = 'ADD attempts';

/**
 * The hour's items are written only with ADD (the counts) and SET (expiry, last failure): what
 * several dispatchers flush for one hour at once adds up, whatever the order.
 */
function countsUpdate(hour: number, counts: HourCounts): { add: string[]; set: string[]; values: Item } {
  const add: string[] = [];
  const values: Item = { ':expiresAt': retentionEndOf(hour + HOUR_MS), ':attempts': counts.attempts };
  for (const name of COUNTERS) {
    if (name === 'attempts' || counts[name] === 0) continue;
    add.push(`${name} :${name}`);
    values[`:${name}`] = counts[name];
  }
  Object.entries(counts.latency).forEach(([bucket, count], index) => {
    if (count === 0) return;
    add.push(`${LATENCY_PREFIX}${bucket} :l${index}`);
    values[`:l${index}`] = count;
  });
  const set = ['expiresAt = :expiresAt'];
  if (sweptForExpiry()) {
    const expiry = statsExpiryIndexKey(retentionEndOf(hour + HOUR_MS) * 1000);
    set.push('gsi3pk = :gsi3pk', 'gsi3sk = :gsi3sk');
    Object.assign(values, { ':gsi3pk': expiry.gsi3pk, ':gsi3sk': expiry.gsi3sk });
  }
  return { add, set, values };
}

/** What a counts write also does when its condition holds; failing that, the counts are written without it. */
interface ConditionalPart {
  add?: string;
  set?: string;
  condition: string;
  names?: Record<string, string>;
  values: Item;
}

/** Whether `part` was written: false when its condition did not hold. */
async function addHourCounts(key: TableKey, hour: number, counts: HourCounts, part?: ConditionalPart): Promise<boolean> {
  const { add, set, values } = countsUpdate(hour, counts);
  const write = (withPart: ConditionalPart | undefined) =>
    updateItem({
      TableName: tableName(),
      Key: key,
      UpdateExpression: `${[`${STATS_COUNTS_UPDATE_START} :attempts`, ...add, ...(withPart?.add ? [withPart.add] : [])].join(', ')} SET ${[...set, ...(withPart?.set ? [withPart.set] : [])].join(', ')}`,
      ...(withPart
        ? {
            ConditionExpression: withPart.condition,
            ...(withPart.names ? { ExpressionAttributeNames: withPart.names } : {}),
            ExpressionAttributeValues: { ...values, ...withPart.values },
          }
        : { ExpressionAttributeValues: values }),
    });
  if (part && (await conditionHeld(write(part)))) return true;
  await write(undefined);
  return false;
}

/** Adds counts to the webhook's hour; `lastFailure` replaces the hour's last failure unless a later one is there. */
export async function addWebhookHourCounts(ref: { account: string; webhookId: string; hour: number }, counts: HourCounts, lastFailure?: AttemptFailure): Promise<void> {
  // Unless another dispatcher flushed a later failure first: then the counts are added without this one.
  const part: ConditionalPart | undefined = lastFailure && {
    set: 'lastFailure = :failure',
    condition: 'attribute_not_exists(lastFailure) OR lastFailure.#at < :failureAt',
    names: { '#at': 'at' },
    values: { ':failure': lastFailure, ':failureAt': lastFailure.at },
  };
  await addHourCounts(webhookStatsHourKey(ref.account, ref.webhookId, ref.hour), ref.hour, counts, part);
}

/**
 * Adds counts to the account's hour, and up to `keep` of `failing.webhookIds` to its set of the
 * webhooks that failed in it while that set holds fewer than `keep`: so it holds every webhook that
 * failed in the hour, or at least `keep` of them and fewer than 2 × `keep`. Bounded because every
 * write is billed for the whole item: a set of all of an account's webhooks could reach 100 KB.
 * `failingSetFull`: the set held `keep` already, and the webhooks were not added.
 */
export async function addAccountHourCounts(
  ref: { account: string; hour: number },
  counts: HourCounts,
  failing: { webhookIds: string[]; keep: number },
): Promise<{ failingSetFull: boolean }> {
  const part: ConditionalPart | undefined =
    failing.webhookIds.length > 0
      ? {
          add: 'failingWebhooks :failing',
          condition: 'attribute_not_exists(failingWebhooks) OR size(failingWebhooks) < :keep',
          values: { ':failing': new Set(failing.webhookIds.slice(0, failing.keep)), ':keep': failing.keep },
        }
      : undefined;
  const added = await addHourCounts(accountStatsHourKey(ref.account, ref.hour), ref.hour, counts, part);
  return { failingSetFull: part !== undefined && !added };
}

function countsOf(item: Item): HourCounts {
  const latency: Record<string, number> = {};
  for (const [name, value] of Object.entries(item)) if (name.startsWith(LATENCY_PREFIX)) latency[name.slice(LATENCY_PREFIX.length)] = Number(value);
  return {
    attempts: Number(item.attempts ?? 0),
    succeeded: Number(item.succeeded ?? 0),
    pending: Number(item.pending ?? 0),
    failed: Number(item.failed ?? 0),
    latency,
  };
}

/**
 * The hours from `first` to `last` (their starts) that have an item, oldest first: small items, at
 * most one per hour of the retention, with only `attributes` (and `sk`) when they are named.
 */
async function queryHours(key: (hour: number) => TableKey, first: number, last: number, attributes?: string[]): Promise<Item[]> {
  const { from, to } = statsHourRange(first, last);
  const names = attributes && ['sk', ...attributes];
  const { items } = await queryAllItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: { ':pk': key(first).pk, ':from': from, ':to': to },
    ...(names
      ? {
          ProjectionExpression: names.map((_, index) => `#p${index}`).join(', '),
          ExpressionAttributeNames: Object.fromEntries(names.map((name, index) => [`#p${index}`, name])),
        }
      : {}),
  });
  return items;
}

const webhookHourOf = (item: Item): WebhookHour => ({ hour: hourOfStatsSortKey(item.sk), counts: countsOf(item), ...(item.lastFailure ? { lastFailure: item.lastFailure as AttemptFailure } : {}) });

export async function queryWebhookHours(account: string, webhookId: string, first: number, last: number): Promise<WebhookHour[]> {
  return (await queryHours((hour) => webhookStatsHourKey(account, webhookId, hour), first, last)).map(webhookHourOf);
}

/** The webhook's failed attempts per hour (`pending` and `failed`, the other counts zero) and each hour's last failure. */
export async function queryWebhookFailures(account: string, webhookId: string, first: number, last: number): Promise<WebhookHour[]> {
  return (await queryHours((hour) => webhookStatsHourKey(account, webhookId, hour), first, last, ['pending', 'failed', 'lastFailure'])).map(webhookHourOf);
}

/** The account's hours: their counts, `latencyBuckets` the buckets' names, and their failing webhooks. */
export async function queryAccountHours(account: string, first: number, last: number, latencyBuckets: readonly string[]): Promise<AccountHour[]> {
  const attributes = [...COUNTERS, ...latencyBuckets.map((bucket) => `${LATENCY_PREFIX}${bucket}`), 'failingWebhooks'];
  const items = await queryHours((hour) => accountStatsHourKey(account, hour), first, last, attributes);
  return items.map((item) => ({ hour: hourOfStatsSortKey(item.sk), counts: countsOf(item), failingWebhooks: [...((item.failingWebhooks as Set<string> | undefined) ?? [])] }));
}

/**
 * Deletes statistics items whose retention ended by `now`, until none is left or `deadline` passes:
 * DynamoDB's TTL does it on AWS; the embedded store has none. Returns how many it deleted.
 */
export async function deleteExpiredStats(now: number, deadline: number): Promise<number> {
  let deleted = 0;
  const batches = expiredBatches([STATS_EXPIRY_PARTITION], (partition, limit) => queryTimeIndexItems(partition, now, limit));
  while (Date.now() < deadline) {
    const batch = await batches.next();
    if (batch.done) break;
    for (const { pk, sk } of batch.value) {
      // Unless written since it was read: a write sets its expiry again (the same one, for its hour).
      const gone = await conditionHeld(
        deleteItem({ TableName: tableName(), Key: { pk, sk }, ConditionExpression: 'expiresAt <= :now', ExpressionAttributeValues: { ':now': Math.floor(now / 1000) } }),
      );
      if (gone) deleted += 1;
    }
  }
  return deleted;
}
