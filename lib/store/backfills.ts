import { tableName } from './client';
import { conditionHeld, unlessConditionFails } from './conditional-write';
import { deleteItem, getItem, putItem, queryItems, queryPages, queryUntilFull, updateItem, type Item } from './items';
import { accountBackfillsKey, BACKFILL_SORT_KEY_PREFIX, backfillKey, GSI1, retentionEndOf, runningBackfillIndexKey } from './table';

export type BackfillStatus = 'running' | 'completed' | 'cancelled' | 'failed';

/** A backfill as stored: a webhook's notifications of the blocks from `fromBlock` to `toBlock`, recorded up to `nextBlock`. */
export interface BackfillRecord {
  account: string;
  webhookId: string;
  backfillId: string;
  chainId: string;
  status: BackfillStatus;
  fromBlock: number;
  toBlock: number;
  /** The first block not yet recorded: the backfill's checkpoint. */
  nextBlock: number;
  /** Notifications recorded by it (those the live follower or an earlier backfill had recorded are not counted). */
  notifications: number;
  createdAt: number;
  updatedAt: number;
  endedAt?: number;
  /** Why it failed, or who cancelled it. */
  reason?: string;
}

const FIELDS = ['account', 'webhookId', 'backfillId', 'chainId', 'status', 'fromBlock', 'toBlock', 'nextBlock', 'notifications', 'createdAt', 'updatedAt', 'endedAt', 'reason'] as const;

function toBackfill(item: Item): BackfillRecord {
  const record = {} as Record<string, unknown>;
  for (const field of FIELDS) if (item[field] !== undefined) record[field] = item[field];
  return record as unknown as BackfillRecord;
}

const keyOf = ({ account, webhookId, backfillId }: Pick<BackfillRecord, 'account' | 'webhookId' | 'backfillId'>) => backfillKey(account, webhookId, backfillId);

/** Which backfill each webhook of the account runs now (webhook id to backfill id). */
export type RunningBackfills = Record<string, string>;

/**
 * Claims the account's running slot for the webhook's backfill: none running for the webhook, and
 * fewer than `max` for the account. One conditional write on one item, so that two calls at once
 * cannot both pass either limit. Returns the slots as they were when refused, or undefined when claimed.
 */
export async function claimRunningBackfill(account: string, webhookId: string, backfillId: string, max: number): Promise<RunningBackfills | undefined> {
  const Key = accountBackfillsKey(account);
  await conditionHeld(putItem({ TableName: tableName(), Item: { ...Key, running: {} }, ConditionExpression: 'attribute_not_exists(pk)' }));
  const claimed = await conditionHeld(
    updateItem({
      TableName: tableName(),
      Key,
      UpdateExpression: 'SET running.#webhook = :backfill',
      ConditionExpression: 'attribute_not_exists(running.#webhook) AND size(running) < :max',
      ExpressionAttributeNames: { '#webhook': webhookId },
      ExpressionAttributeValues: { ':backfill': backfillId, ':max': max },
    }),
  );
  if (claimed) return undefined;
  return runningBackfills(account);
}

export async function runningBackfills(account: string): Promise<RunningBackfills> {
  const item = await getItem({ TableName: tableName(), Key: accountBackfillsKey(account), ConsistentRead: true });
  return (item?.running as RunningBackfills | undefined) ?? {};
}

/** Frees the webhook's slot if `backfillId` still holds it; a slot another backfill holds is left alone. */
export async function releaseRunningBackfill(account: string, webhookId: string, backfillId: string): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: accountBackfillsKey(account),
      UpdateExpression: 'REMOVE running.#webhook',
      ConditionExpression: 'running.#webhook = :backfill',
      ExpressionAttributeNames: { '#webhook': webhookId },
      ExpressionAttributeValues: { ':backfill': backfillId },
    }),
  );
}

/** Records a new running backfill, in its chain's running ones (gsi1). */
export async function putNewBackfill(record: BackfillRecord): Promise<void> {
  await putItem({
    TableName: tableName(),
    Item: { ...keyOf(record), ...runningBackfillIndexKey(record.chainId, record.backfillId, record.createdAt), ...record },
    ConditionExpression: 'attribute_not_exists(pk)',
  });
}

export async function getBackfill(account: string, webhookId: string, backfillId: string): Promise<BackfillRecord | undefined> {
  const item = await getItem({ TableName: tableName(), Key: backfillKey(account, webhookId, backfillId), ConsistentRead: true });
  return item && toBackfill(item);
}

/** Up to `limit` of the webhook's backfills, newest first, after `afterId`; and whether more follow. */
export async function queryBackfills(account: string, webhookId: string, limit: number, afterId?: string): Promise<{ backfills: BackfillRecord[]; more: boolean }> {
  const { items } = await queryUntilFull(
    {
      TableName: tableName(),
      KeyConditionExpression: afterId === undefined ? 'pk = :pk AND begins_with(sk, :prefix)' : 'pk = :pk AND sk BETWEEN :prefix AND :before',
      ExpressionAttributeValues: {
        ':pk': backfillKey(account, webhookId, '').pk,
        ':prefix': BACKFILL_SORT_KEY_PREFIX,
        ...(afterId === undefined ? {} : { ':before': backfillKey(account, webhookId, afterId).sk }),
      },
      ScanIndexForward: false,
      ConsistentRead: true,
    },
    limit + 2,
  );
  // BETWEEN includes the token's own backfill.
  const backfills = items.map(toBackfill).filter(({ backfillId }) => backfillId !== afterId);
  return { backfills: backfills.slice(0, limit), more: backfills.length > limit };
}

/** The chain's running backfills, the longest waiting for their turn first (gsi1: eventually consistent). */
export async function runningBackfillsOfChain(chainId: string, limit: number): Promise<BackfillRecord[]> {
  const page = await queryItems({
    TableName: tableName(),
    IndexName: GSI1.indexName,
    KeyConditionExpression: `${GSI1.partitionKey} = :pk`,
    ExpressionAttributeValues: { ':pk': runningBackfillIndexKey(chainId, '', 0).gsi1pk },
    Limit: limit,
  });
  return page.items.map(toBackfill);
}

/**
 * Moves a running backfill's checkpoint from `record.nextBlock` to `nextBlock`, and its turn to now;
 * false when it was cancelled or moved meanwhile.
 */
export async function advanceBackfill(record: BackfillRecord, nextBlock: number, notifications: number, now = Date.now()): Promise<boolean> {
  const { gsi1sk } = runningBackfillIndexKey(record.chainId, record.backfillId, now);
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: keyOf(record),
      UpdateExpression: `SET nextBlock = :next, notifications = notifications + :added, updatedAt = :now, ${GSI1.sortKey} = :turn`,
      ConditionExpression: '#status = :running AND nextBlock = :expected',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':next': nextBlock, ':added': notifications, ':now': now, ':turn': gsi1sk, ':running': 'running', ':expected': record.nextBlock },
    }),
  );
}

/**
 * Ends a running backfill (out of its chain's running ones, kept for the retention on AWS); undefined
 * when it was not running. Its account's running slot is freed by the caller.
 */
export async function endBackfill(record: BackfillRecord, status: Exclude<BackfillStatus, 'running'>, reason?: string, now = Date.now()): Promise<BackfillRecord | undefined> {
  const updated = await unlessConditionFails(
    updateItem({
      TableName: tableName(),
      Key: keyOf(record),
      UpdateExpression: `SET #status = :status, endedAt = :now, updatedAt = :now, expiresAt = :expires${reason ? ', reason = :reason' : ''} REMOVE ${GSI1.partitionKey}, ${GSI1.sortKey}`,
      ConditionExpression: '#status = :running',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':status': status, ':now': now, ':expires': retentionEndOf(now), ':running': 'running', ...(reason ? { ':reason': reason } : {}) },
      ReturnValues: 'ALL_NEW',
    }),
  );
  return updated && toBackfill(updated);
}

/** The webhook's backfills, newest first, a page at a time: their keys, ids and statuses. */
const backfillPages = (account: string, webhookId: string) =>
  queryPages({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': backfillKey(account, webhookId, '').pk, ':prefix': BACKFILL_SORT_KEY_PREFIX },
    ProjectionExpression: 'pk, sk, backfillId, #status',
    ExpressionAttributeNames: { '#status': 'status' },
    ScanIndexForward: false,
  });

/** Deletes the webhook's ended backfills beyond its newest `kept`; the running one is never deleted. Returns how many. */
export async function deleteBackfillsBeyond(account: string, webhookId: string, kept: number): Promise<number> {
  let deleted = 0;
  let seen = 0;
  for await (const { items } of backfillPages(account, webhookId)) {
    for (const item of items) {
      seen += 1;
      if (seen <= kept || item.status === 'running') continue;
      const ended = conditionHeld(
        deleteItem({
          TableName: tableName(),
          Key: { pk: item.pk, sk: item.sk },
          ConditionExpression: '#status <> :running',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':running': 'running' },
        }),
      );
      if (await ended) deleted += 1;
    }
  }
  return deleted;
}

/**
 * Deletes every backfill of a webhook deleted for good (its purge). The runner frees the running slot
 * of a backfill it ends, but one deleted under it is never ended: its slot is freed here, or the
 * account could start no other backfill in its place.
 */
export async function deleteWebhookBackfills(account: string, webhookId: string): Promise<void> {
  for await (const { items } of backfillPages(account, webhookId)) {
    await Promise.all(
      items.map(async (item) => {
        await deleteItem({ TableName: tableName(), Key: { pk: item.pk, sk: item.sk } });
        if (item.status === 'running') await releaseRunningBackfill(account, webhookId, item.backfillId as string);
      }),
    );
  }
}
