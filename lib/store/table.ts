import { runtimeConfig } from '../config/runtime';
import { uuidFromHex, uuidHex } from '../uuid';

/**
 * The single table's key design: every key string in the project is built here. Its items, indexes
 * and access patterns, and why they are so, are described once, in docs/table-design.md.
 */
export const TABLE_KEYS = { partitionKey: 'pk', sortKey: 'sk' } as const;

/** A time (ms) in a sort key: whole, not below 0, 15 digits, so that keys sort as their times do. */
const sortableTime = (ms: number) => String(Math.max(0, Math.floor(ms))).padStart(15, '0');
export const GSI1 = { indexName: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' } as const;
/** Sparse, keys only: inactive webhooks by chain, and failed and parked messages by webhook. Its sort key is the table's. */
export const GSI2 = { indexName: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'sk' } as const;
/** Sparse, keys only: messages by the time they are due (or expire). */
export const GSI3 = { indexName: 'gsi3', partitionKey: 'gsi3pk', sortKey: 'gsi3sk' } as const;

export interface TableKey {
  pk: string;
  sk: string;
}

const accountPartition = (account: string) => `ACCOUNT#${account}`;

export const WEBHOOK_SORT_KEY_PREFIX = 'WEBHOOK#';

export const accountKey = (account: string): TableKey => ({ pk: accountPartition(account), sk: 'ACCOUNT' });

export const sharedSecretKey = (account: string): TableKey => ({ pk: accountPartition(account), sk: 'SECRET' });

/** What the account holds (its webhooks and their addresses), counted for its limits. */
export const accountUsageKey = (account: string): TableKey => ({ pk: accountPartition(account), sk: 'USAGE' });

/**
 * The account's windows of calls per minute (all its webhooks together): apart from the usage item,
 * which is large, because every write is billed by the size of the whole item.
 */
export const accountCallWindowsKey = (account: string): TableKey => ({ pk: accountPartition(account), sk: 'CALLS' });

/** The id of the webhook (or purge job) whose sort key this is. */
export const webhookIdOfSortKey = (sk: string) => sk.slice(WEBHOOK_SORT_KEY_PREFIX.length);

export const webhookKey = (account: string, id: string): TableKey => ({
  pk: accountPartition(account),
  sk: `${WEBHOOK_SORT_KEY_PREFIX}${id}`,
});

/** Where a webhook sits in gsi1: under its account and current status. */
export const webhookStatusIndexKey = (account: string, status: string, id: string) => ({
  gsi1pk: `${accountPartition(account)}#WEBHOOKS#${status}`,
  gsi1sk: `${WEBHOOK_SORT_KEY_PREFIX}${id}`,
});

/** The partition of a webhook's watched addresses, in address order, and of its address change record. */
const webhookAddressesPartition = (account: string, id: string) => `${accountPartition(account)}#WEBHOOK#${id}`;

export const WEBHOOK_ADDRESS_SORT_KEY_PREFIX = 'ADDRESS#';

export const webhookAddressKey = (account: string, id: string, address: string): TableKey => ({
  pk: webhookAddressesPartition(account, id),
  sk: `${WEBHOOK_ADDRESS_SORT_KEY_PREFIX}${address}`,
});

/** The address of a webhook's address item, from its sort key. */
export const addressOfSortKey = (sk: string) => sk.slice(WEBHOOK_ADDRESS_SORT_KEY_PREFIX.length);

/** At most one per webhook: the change to its addresses under way, until it is applied. */
export const addressChangeKey = (account: string, id: string): TableKey => ({
  pk: webhookAddressesPartition(account, id),
  sk: 'ADDRESS_CHANGE',
});

/** Every address change record is also in gsi1, oldest first, for the sweep that completes interrupted ones. */
export const ADDRESS_CHANGES_INDEX_PARTITION = 'ADDRESS_CHANGES';
export const addressChangeIndexKey = (startedAt: number, changeId: string) => ({
  gsi1pk: ADDRESS_CHANGES_INDEX_PARTITION,
  gsi1sk: `${String(startedAt).padStart(15, '0')}#${changeId}`,
});

/**
 * The partition of everything the matcher reads about one address on one chain. The address is
 * written without its `0x`, and watcher items hold nothing but the webhook's id: a watcher item is
 * about 97 bytes as DynamoDB counts them, so that one Query page (1 MB) holds some 10 000 watchers.
 */
const watchPartition = (chainId: string, address: string) => `WATCH#${chainId}#${address.slice(2)}`;

/** The address of a watch partition. */
export const addressOfWatchPartition = (pk: string) => `0x${pk.slice(pk.lastIndexOf('#') + 1)}`;

/**
 * Exists while any webhook may watch the address on the chain: what the matcher's batch reads ask
 * for. Its sort key sorts before every watcher's, which are base64url.
 */
export const watchHeadKey = (chainId: string, address: string): TableKey => ({ pk: watchPartition(chainId, address), sk: '#' });

/** One per webhook watching the address: the webhook's id (16 bytes, base64url) is its sort key. */
export const watcherKey = (chainId: string, address: string, webhookId: string): TableKey => ({
  pk: watchPartition(chainId, address),
  sk: Buffer.from(uuidHex(webhookId), 'hex').toString('base64url'),
});

export const webhookIdOfWatcherSortKey = (sk: string) => uuidFromHex(Buffer.from(sk, 'base64url').toString('hex'));

/** Names a webhook's account, so that what knows only its id (the matcher) can reach its item. */
export const webhookPointerKey = (webhookId: string): TableKey => ({ pk: `${WEBHOOK_SORT_KEY_PREFIX}${webhookId}`, sk: 'ACCOUNT' });

export const PURGES_PARTITION = 'PURGES';
export const purgeJobKey = (id: string): TableKey => ({ pk: PURGES_PARTITION, sk: `${WEBHOOK_SORT_KEY_PREFIX}${id}` });

export const BACKFILL_SORT_KEY_PREFIX = 'BACKFILL#';
export const backfillKey = (account: string, webhookId: string, backfillId: string): TableKey => ({
  pk: webhookAddressesPartition(account, webhookId),
  sk: `${BACKFILL_SORT_KEY_PREFIX}${backfillId}`,
});

/** Where a running backfill sits in gsi1: under its chain, by its turn (ms), for the chain's backfill runner. */
export const runningBackfillIndexKey = (chainId: string, backfillId: string, turn: number) => ({
  gsi1pk: `CHAIN#${chainId}#BACKFILLS`,
  gsi1sk: `${sortableTime(turn)}#${backfillId}`,
});

/** The account's running backfills: which webhook runs which. */
export const accountBackfillsKey = (account: string): TableKey => ({ pk: accountPartition(account), sk: 'BACKFILLS' });

/** A webhook activated again: its messages that waited for it are to be queued again (by the delivery sweep). */
export const RESUMES_PARTITION = 'RESUMES';
export const resumeJobKey = (id: string): TableKey => ({ pk: RESUMES_PARTITION, sk: `${WEBHOOK_SORT_KEY_PREFIX}${id}` });

/** What an inactive webhook's gsi2pk is set to: the inactive webhooks of its chain. */
export const inactiveWebhooksPartition = (chainId: string) => `CHAIN#${chainId}#INACTIVE`;
/** What an active webhook's gsi2pk is set to when it asks for internal transactions: its chain's blocks are traced while there is one. */
export const internalTxWebhooksPartition = (chainId: string) => `CHAIN#${chainId}#INTERNAL_TXS`;

/** A followed chain's state: how far the follower has got, and who follows it now. */
const chainPartition = (chainId: string) => `CHAIN#${chainId}`;
export const chainCheckpointKey = (chainId: string): TableKey => ({ pk: chainPartition(chainId), sk: 'CHECKPOINT' });
export const chainLeaseKey = (chainId: string): TableKey => ({ pk: chainPartition(chainId), sk: 'LEASE' });
/** Who runs the chain's backfills now: one runner per chain, so that its RPC pacing holds for the chain. */
export const chainBackfillLeaseKey = (chainId: string): TableKey => ({ pk: chainPartition(chainId), sk: 'BACKFILL_LEASE' });
/** The chain's head as its follower last saw it: what GET /v1/chains shows beside the checkpoint. */
export const chainHeadKey = (chainId: string): TableKey => ({ pk: chainPartition(chainId), sk: 'HEAD' });
/** What the chain's follower says of itself (its state, last failure, trace method): GET /v1/chains's `follower`. */
export const chainFollowerStatusKey = (chainId: string): TableKey => ({ pk: chainPartition(chainId), sk: 'FOLLOWER' });
/** A token's name, symbol and decimals, read from the chain once. */
export const tokenMetadataKey = (chainId: string, address: string): TableKey => ({ pk: chainPartition(chainId), sk: `TOKEN#${address.toLowerCase()}` });
export const QUARANTINE_SORT_KEY_PREFIX = 'QUARANTINE#';
/** A block the follower went past without recording it, or one webhook's notifications of it: in block order under its chain. */
export const quarantinedBlockKey = (chainId: string, number: number, webhookId?: string): TableKey => ({
  pk: chainPartition(chainId),
  sk: `${QUARANTINE_SORT_KEY_PREFIX}${String(number).padStart(15, '0')}${webhookId ? `#${webhookId}` : ''}`,
});

/** An endpoint's health (an origin an account's webhooks send to): its recent failures and speed, and the circuit's probe lease. */
export const endpointHealthKey = (account: string, origin: string): TableKey => ({ pk: `${accountPartition(account)}#ENDPOINT#${origin}`, sk: 'HEALTH' });

const STATS_HOUR_SORT_KEY_PREFIX = 'HOUR#';
const statsHourSortKey = (hour: number) => `${STATS_HOUR_SORT_KEY_PREFIX}${sortableTime(hour)}`;

/** A webhook's delivery statistics of one hour (its start, ms): one partition per webhook, its hours in order. */
export const webhookStatsHourKey = (account: string, webhookId: string, hour: number): TableKey => ({
  pk: `${webhookAddressesPartition(account, webhookId)}#STATS`,
  sk: statsHourSortKey(hour),
});

/** The account's delivery statistics of one hour, all its webhooks together. */
export const accountStatsHourKey = (account: string, hour: number): TableKey => ({ pk: `${accountPartition(account)}#STATS`, sk: statsHourSortKey(hour) });

/** The sort keys of the hours from `first` to `last` (their starts, ms), both included: a Query's BETWEEN. */
export const statsHourRange = (first: number, last: number) => ({ from: statsHourSortKey(first), to: statsHourSortKey(last) });
export const hourOfStatsSortKey = (sk: string) => Number(sk.slice(STATS_HOUR_SORT_KEY_PREFIX.length));

/** Where the store has no TTL (locally): statistics items in gsi3 by their expiry, for the local sweep to delete them. */
export const STATS_EXPIRY_PARTITION = 'EXPIRES#STATS';
export const statsExpiryIndexKey = (at: number) => ({ gsi3pk: STATS_EXPIRY_PARTITION, gsi3sk: timeKey(at, 'STATS') });

/**
 * Whose attempt slots: an account's (all its attempts), or its attempts to one `site` (a registrable
 * domain, or the host of a URL that has none) or to one resolved `address`.
 */
export type SlotPool = { account: string } | { account: string; site: string } | { account: string; address: string };

/**
 * Slots per partition of a pool: a pool of `capacity` slots is spread over ceil(capacity / 4)
 * partitions, so that an account whose receivers take hundreds of attempts at once reads and writes
 * many partitions, none past DynamoDB's limits (docs/delivery-scale.md).
 */
export const SLOTS_PER_SHARD = 4;
export const slotShards = (capacity: number) => Math.max(1, Math.ceil(capacity / SLOTS_PER_SHARD));
export const shardOfSlot = (slot: number) => Math.floor(slot / SLOTS_PER_SHARD);

const slotPoolName = (pool: SlotPool) => {
  if ('site' in pool) return `site#${pool.account}#${pool.site}`;
  if ('address' in pool) return `address#${pool.account}#${pool.address}`;
  return `account#${pool.account}`;
};
/**
 * One partition of a destination's attempts in the second under way (a site or an address, whoever
 * sends to it): a rate of R a second is counted in ceil(R / 500) partitions, so that no partition
 * counts more than 500 a second (in leases of up to 10, about 50 writes).
 */
export const RATE_PER_SHARD = 500;
export const rateShards = (rate: number) => Math.max(1, Math.ceil(rate / RATE_PER_SHARD));
export const destinationRateKey = (destination: string, shard: number): TableKey => ({ pk: `RATE#${destination}#${shard}`, sk: 'SECOND' });

/** The partition of one shard of a pool's attempt slots, and one slot in it. */
export const attemptSlotsPartition = (pool: SlotPool, shard: number) => `SLOTS#${slotPoolName(pool)}#${shard}`;
export const attemptSlotKey = (pool: SlotPool, slot: number): TableKey => ({ pk: attemptSlotsPartition(pool, shardOfSlot(slot)), sk: String(slot).padStart(4, '0') });
export const slotOfSortKey = (sk: string) => Number(sk);

const webhookMessagesPartition = (account: string, webhookId: string) => `${webhookAddressesPartition(account, webhookId)}#MESSAGES`;

/**
 * A webhook's messages are spread over this many partitions by the last hex digit of their id
 * (random in a UUIDv7): DynamoDB takes at most 1 000 writes a second on one partition key, and a
 * message is written four times. Never changed: a message's key depends on it.
 */
export const MESSAGE_PARTITIONS = 8;

/** The partition of a webhook's log (`log`, its partitions' common prefix) that holds `messageId`. */
export const spreadMessagePartition = (log: string, messageId: string) => `${log}#${parseInt(messageId.slice(-1), 16) % MESSAGE_PARTITIONS}`;
const messagePartition = (account: string, webhookId: string, messageId: string) => spreadMessagePartition(webhookMessagesPartition(account, webhookId), messageId);

/** Every partition of a webhook's log. */
export const messagePartitions = (account: string, webhookId: string) =>
  Array.from({ length: MESSAGE_PARTITIONS }, (_, index) => `${webhookMessagesPartition(account, webhookId)}#${index}`);

/** Where an earlier version kept all of a webhook's messages, in one partition. */
export const isUnspreadMessagePartition = (pk: string) => pk.endsWith('#MESSAGES');

export const MESSAGE_SORT_KEY_PREFIX = 'MESSAGE#';
export const MESSAGE_BODY_SORT_KEY_PREFIX = 'B#';

/** A message's sort key (its state item's, in the log and in gsi2), and its id from one. */
export const messageSortKey = (messageId: string) => `${MESSAGE_SORT_KEY_PREFIX}${messageId}`;
export const messageIdOfSortKey = (sk: string) => sk.slice(MESSAGE_SORT_KEY_PREFIX.length);

export const messageKey = (account: string, webhookId: string, messageId: string): TableKey => ({
  pk: messagePartition(account, webhookId, messageId),
  sk: messageSortKey(messageId),
});

/** A message's body: its event, compressed, written once beside the message. */
export const messageBodyKey = (account: string, webhookId: string, messageId: string): TableKey => ({
  pk: messagePartition(account, webhookId, messageId),
  sk: `${MESSAGE_BODY_SORT_KEY_PREFIX}${messageId}`,
});

/** Where a failed message, or a pending one parked while its webhook is inactive, sits in gsi2: under its webhook and status, newest first. */
export const messageStatusPartition = (account: string, webhookId: string, status: 'pending' | 'failed') => `${webhookMessagesPartition(account, webhookId)}#${status}`;

/**
 * The due-time index is spread over the stage's shards (delivery.dueIndexShards): on AWS one index
 * partition takes at most 1 000 writes a second, and every message's insert and end write it. A
 * message's shard comes from the last 12 bits of its id (random in a UUIDv7): up to 4 096 shards, and
 * the same shard as from its last 8 bits while the count divides 256.
 */
export const dueIndexShards = () => runtimeConfig().delivery.dueIndexShards;
const shardOf = (messageId: string) => parseInt(messageId.slice(-3), 16) % dueIndexShards();
/** A gsi3 sort key: the time, then what is due or expires then (a message's id, or STATS). */
const timeKey = (ms: number, what: string) => `${sortableTime(ms)}#${what}`;

const duePartition = (shard: number) => `DUE#${shard}`;
const expiresPartition = (shard: number) => `EXPIRES#${shard}`;
const shards = () => Array.from({ length: dueIndexShards() }, (_, shard) => shard);

/** Every partition of gsi3 that holds pending messages (by when they are due), and every one that holds finished messages (by when they expire). */
export const duePartitions = () => shards().map(duePartition);
export const expiryPartitions = () => shards().map(expiresPartition);

/** A pending message in gsi3: the sweep takes it up once `at` has passed. */
export const messageDueIndexKey = (messageId: string, at: number) => ({ gsi3pk: duePartition(shardOf(messageId)), gsi3sk: timeKey(at, messageId) });

/** A finished message in gsi3: the local sweep deletes it once `at` has passed. */
export const messageExpiryIndexKey = (messageId: string, at: number) => ({
  gsi3pk: expiresPartition(shardOf(messageId)),
  gsi3sk: timeKey(at, messageId),
});

/** DynamoDB's TTL attribute on AWS: finished messages, message bodies, endpoint health, attempt slots and statistics carry it (Unix seconds). */
export const EXPIRES_AT_ATTRIBUTE = 'expiresAt';

/** The TTL value of what is kept for the retention (delivery.retentionDays) from `ms`. */
export const retentionEndOf = (ms: number) => Math.floor(ms / 1000) + runtimeConfig().delivery.retentionDays * 86_400;

/** The upper bound of a gsi3 Query for what is due (or expired) at `ms`. */
export const timeKeyBound = (ms: number) => `${String(Math.floor(ms)).padStart(15, '0')}#~`;

/** The message's key from its table key, as gsi3's keys-only Query returns it. */
export function messageRefOfKey(key: TableKey): { account: string; webhookId: string; messageId: string } {
  const [, account, , webhookId] = key.pk.split('#');
  return { account: account!, webhookId: webhookId!, messageId: messageIdOfSortKey(key.sk) };
}

const API_KEY_PARTITION_PREFIX = 'APIKEY#';

export const apiKeyKey = (keyHash: string): TableKey => ({ pk: `${API_KEY_PARTITION_PREFIX}${keyHash}`, sk: 'APIKEY' });

/** The key's SHA-256 (hex), from its item's partition key. */
export const apiKeyHashOfPartition = (pk: string) => pk.slice(API_KEY_PARTITION_PREFIX.length);

/** Names the hash of the account's key listed under `keyId`: a revocation by id reads this one item. */
export const apiKeyIdKey = (account: string, keyId: string): TableKey => ({ pk: accountPartition(account), sk: `APIKEYID#${keyId}` });

/** The partition of the keys that the account's key `keyId` made, each by its id: what a revocation walks. */
export const apiKeysMadeByPartition = (account: string, keyId: string) => `${accountPartition(account)}#APIKEY#${keyId}#MADE`;
export const apiKeyMadeByKey = (account: string, creatorKeyId: string, keyId: string): TableKey => ({
  pk: apiKeysMadeByPartition(account, creatorKeyId),
  sk: `APIKEY#${keyId}`,
});

export const apiKeyAccountIndexKey = (account: string, createdAt: string) => ({
  gsi1pk: `${accountPartition(account)}#APIKEYS`,
  gsi1sk: `APIKEY#${createdAt}`,
});

/** Written once the messages of an earlier layout (their status in gsi1) are in gsi2: an embedded store's layout mark. */
export const messageStatusIndexMarkKey: TableKey = { pk: 'LAYOUT', sk: 'MESSAGE_STATUS_INDEX' };

/** Written once the messages of an earlier layout (one partition per webhook) are spread over its partitions: an embedded store's layout mark. */
export const messagePartitionsMarkKey: TableKey = { pk: 'LAYOUT', sk: 'MESSAGE_PARTITIONS' };
/** Marks a table whose webhooks that ask for internal transactions are in their gsi2 partition. */
export const internalTxIndexMarkKey: TableKey = { pk: 'LAYOUT', sk: 'INTERNAL_TX_WEBHOOKS' };

/** The table as DynamoDB's CreateTable takes it; the CDK stack declares the same names. */
export function tableDefinition(tableName: string) {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: [TABLE_KEYS.partitionKey, TABLE_KEYS.sortKey, GSI1.partitionKey, GSI1.sortKey, GSI2.partitionKey, GSI3.partitionKey, GSI3.sortKey].map((name) => ({
      AttributeName: name,
      AttributeType: 'S' as const,
    })),
    KeySchema: [
      { AttributeName: TABLE_KEYS.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: TABLE_KEYS.sortKey, KeyType: 'RANGE' as const },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: GSI1.indexName,
        KeySchema: [
          { AttributeName: GSI1.partitionKey, KeyType: 'HASH' as const },
          { AttributeName: GSI1.sortKey, KeyType: 'RANGE' as const },
        ],
        Projection: { ProjectionType: 'ALL' as const },
      },
      {
        IndexName: GSI2.indexName,
        KeySchema: [
          { AttributeName: GSI2.partitionKey, KeyType: 'HASH' as const },
          { AttributeName: GSI2.sortKey, KeyType: 'RANGE' as const },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' as const },
      },
      {
        IndexName: GSI3.indexName,
        KeySchema: [
          { AttributeName: GSI3.partitionKey, KeyType: 'HASH' as const },
          { AttributeName: GSI3.sortKey, KeyType: 'RANGE' as const },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' as const },
      },
    ],
  };
}
