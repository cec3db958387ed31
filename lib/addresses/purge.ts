/**
 * Permanent deletion: the webhook's item goes at once; its addresses and their index entries (up to
 * a million of each) are purged in the background by a resumable job, which deletes a page of
 * addresses' index entries before the addresses themselves, so that a job cut off anywhere is
 * completed by running it again.
 */
import { deleteWebhookBackfills } from '../store/backfills';
import { runtimeConfig } from '../config/runtime';
import { uncountWebhook } from '../limits/account-limits';
import { deleteAddressChange, getAddressChange, queryWebhookAddresses } from '../store/addresses';
import { inChunks, writeItems } from '../store/batch';
import { deleteItem, getItem, putItem, queryItems, updateItem } from '../store/items';
import { tableName } from '../store/client';
import { conditionHeld, unlessConditionFails } from '../store/conditional-write';
import { GSI2, inactiveWebhooksPartition, PURGES_PARTITION, purgeJobKey, webhookAddressKey, webhookKey, webhookPointerKey } from '../store/table';
import { deleteHeadIfUnchanged, headWrites, watchState, watcherWrites } from '../store/watch-index';
import { deleteWebhookItem } from '../store/webhooks';

export interface PurgeJob {
  account: string;
  webhookId: string;
  chainId: string;
  /** False until the webhook's item is deleted: a job left unready by a crash is checked before it runs. */
  ready: boolean;
  createdAt: number;
  /** Not before the lease of an address change under way at the deletion has expired. */
  notBefore: number;
  leaseExpiresAt?: number;
}

/** Addresses purged between two checks of the job's lease and deadline. */
const PAGE = 1_000;
const HEAD_CHECKS_IN_PARALLEL = 16;

const leaseMs = () => runtimeConfig().leaseSeconds * 1000;

/**
 * The job's item. It is in gsi2 with the chain's inactive webhooks (its sort key is the webhook's),
 * so that the matcher drops the webhook from the moment it is deleted, not once its watchers are purged.
 */
const purgeJobItem = (job: PurgeJob) => ({ ...purgeJobKey(job.webhookId), ...job, [GSI2.partitionKey]: inactiveWebhooksPartition(job.chainId) });

/**
 * Deletes the webhook's item, with a purge job for the rest recorded first, so that no crash can
 * leave addresses of a webhook that no longer exists with nothing to purge them. Returns the item as
 * it was; undefined when there was none.
 */
export async function deleteWebhookPermanently(account: string, webhookId: string): Promise<Record<string, any> | undefined> {
  const current = await getItem({ TableName: tableName(), Key: webhookKey(account, webhookId), ConsistentRead: true });
  if (!current) return undefined;
  const now = Date.now();
  const job: PurgeJob = { account, webhookId, chainId: current.chainId, ready: false, createdAt: now, notBefore: now };
  await putItem({ TableName: tableName(), Item: purgeJobItem(job) });
  const deleted = await deleteWebhookItem(account, webhookId);
  if (!deleted) {
    await deleteItem({ TableName: tableName(), Key: purgeJobKey(webhookId) });
    return undefined;
  }
  await updateItem({
    TableName: tableName(),
    Key: purgeJobKey(webhookId),
    UpdateExpression: 'SET ready = :true, notBefore = :notBefore',
    ExpressionAttributeValues: { ':true': true, ':notBefore': Math.max(now, deleted.addressLease?.expiresAt ?? 0) },
  });
  // Its slot and addresses stay counted until its purge has removed them (below): freed at once, a
  // loop of create and delete would pile up items waiting for the purge beyond the account's limits.
  return deleted;
}

/** Records a purge for the addresses of a webhook that no longer exists, unless one is recorded. */
export async function ensurePurgeJob({ account, webhookId, chainId }: Pick<PurgeJob, 'account' | 'webhookId' | 'chainId'>): Promise<void> {
  const now = Date.now();
  await unlessConditionFails(
    putItem({
      TableName: tableName(),
      Item: purgeJobItem({ account, webhookId, chainId, ready: true, createdAt: now, notBefore: now + leaseMs() }),
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

/** Up to 100 recorded purge jobs. */
async function purgeJobs(): Promise<PurgeJob[]> {
  const { items } = await queryItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': PURGES_PARTITION },
    ConsistentRead: true,
    Limit: 100,
  });
  return items as unknown as PurgeJob[];
}

/** Takes the job's lease (when free or expired); returns its expiry, undefined when another process holds it. */
async function claim(job: PurgeJob, now: number): Promise<number | undefined> {
  const expiresAt = now + leaseMs();
  const claimed = await conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: purgeJobKey(job.webhookId),
      UpdateExpression: 'SET leaseExpiresAt = :expiresAt',
      ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(leaseExpiresAt) OR leaseExpiresAt < :now)',
      ExpressionAttributeValues: { ':expiresAt': expiresAt, ':now': now },
    }),
  );
  return claimed ? expiresAt : undefined;
}

/** Renews the job's lease, or with `release` gives it up; false when another process took it over. */
async function renew(job: PurgeJob, heldUntil: number, next: number | 'release'): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: purgeJobKey(job.webhookId),
      UpdateExpression: next === 'release' ? 'REMOVE leaseExpiresAt' : 'SET leaseExpiresAt = :next',
      ConditionExpression: 'leaseExpiresAt = :held',
      ExpressionAttributeValues: { ':held': heldUntil, ...(next === 'release' ? {} : { ':next': next }) },
    }),
  );
}

/** Whether a job is due; an unready one whose deletion crashed is dropped if the webhook still exists. */
async function isDue(job: PurgeJob, now: number): Promise<boolean> {
  if (job.ready) return job.notBefore <= now;
  if (job.createdAt + leaseMs() > now) return false; // its deletion may still be under way
  const webhook = await getItem({ TableName: tableName(), Key: webhookKey(job.account, job.webhookId), ConsistentRead: true });
  if (!webhook) return true;
  await deleteItem({ TableName: tableName(), Key: purgeJobKey(job.webhookId) });
  return false;
}

/**
 * Runs the due purge jobs until `deadline`; a job not finished by then is taken up again by the next
 * run, of this process or another. Returns how many jobs it finished, and whether it left one unfinished.
 */
export async function runPurges(deadline: number): Promise<{ finished: number; unfinished: boolean }> {
  let finished = 0;
  let unfinished = false;
  for (const job of await purgeJobs()) {
    const now = Date.now();
    if (now >= deadline) return { finished, unfinished: true };
    if (!(await isDue(job, now))) continue;
    const heldUntil = await claim(job, now);
    if (heldUntil === undefined) continue;
    if (await purge(job, heldUntil, deadline)) {
      await deleteItem({ TableName: tableName(), Key: purgeJobKey(job.webhookId) });
      finished += 1;
    } else unfinished = true;
  }
  return { finished, unfinished };
}

/**
 * Purges page after page, renewing the job's lease between pages; false when the deadline came first
 * (the lease is then given up, for the next run to continue at once) or the lease was lost.
 */
async function purge(job: PurgeJob, heldUntil: number, deadline: number): Promise<boolean> {
  const leftover = await getAddressChange(job.account, job.webhookId);
  if (leftover) await purgeAddresses(job, leftover.addresses);
  for (;;) {
    if (Date.now() >= deadline) {
      await renew(job, heldUntil, 'release');
      return false;
    }
    const next = Date.now() + leaseMs();
    if (!(await renew(job, heldUntil, next))) return false;
    heldUntil = next;
    const { addresses } = await queryWebhookAddresses(job.account, job.webhookId, PAGE);
    if (addresses.length === 0) break;
    await purgeAddresses(job, addresses);
  }
  if (leftover) await deleteAddressChange(leftover);
  await deleteWebhookBackfills(job.account, job.webhookId);
  await uncountWebhook(job.account, job.webhookId);
  await deleteItem({ TableName: tableName(), Key: webhookPointerKey(job.webhookId) });
  return true;
}

/**
 * The index entries first, the webhook's address items last: they are what the next page is read
 * from. A head left with no watcher goes; one still watched by others gets a new token, which drops
 * the watchers the matcher saved in it (this webhook among them).
 */
async function purgeAddresses(job: PurgeJob, addresses: string[]): Promise<void> {
  await writeItems(watcherWrites(job.chainId, job.webhookId, addresses, 'remove'));
  const stillWatched: string[] = [];
  await inChunks(addresses, 1, HEAD_CHECKS_IN_PARALLEL, async ([address]) => {
    const { headToken, watched } = await watchState(job.chainId, address!);
    if (watched) stillWatched.push(address!);
    else if (headToken !== undefined) await deleteHeadIfUnchanged(job.chainId, address!, headToken);
  });
  await writeItems(headWrites(job.chainId, stillWatched));
  await writeItems(addresses.map((address) => ({ delete: webhookAddressKey(job.account, job.webhookId, address) })));
}
