/** Purge jobs: what is left to delete of a webhook deleted for good, recorded before its item goes. */
import { tableName } from './client';
import { unlessConditionFails } from './conditional-write';
import { deleteItem, putItem, queryItems, updateItem } from './items';
import { releaseLease, renewLease, takeLease, type LeaseSite } from './leases';
import { GSI2, inactiveWebhooksPartition, PURGES_PARTITION, purgeJobKey } from './table';

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

/**
 * The job's item. It is in gsi2 with the chain's inactive webhooks (its sort key is the webhook's),
 * so that the matcher drops the webhook from the moment it is deleted, not once its watchers are purged.
 */
const purgeJobItem = (job: PurgeJob) => ({ ...purgeJobKey(job.webhookId), ...job, [GSI2.partitionKey]: inactiveWebhooksPartition(job.chainId) });

export async function putPurgeJob(job: PurgeJob): Promise<void> {
  await putItem({ TableName: tableName(), Item: purgeJobItem(job) });
}

/** Records the job unless one is recorded for the webhook already. */
export async function putPurgeJobIfMissing(job: PurgeJob): Promise<void> {
  await unlessConditionFails(putItem({ TableName: tableName(), Item: purgeJobItem(job), ConditionExpression: 'attribute_not_exists(pk)' }));
}

/** The webhook's item is deleted: the job may run from `notBefore`. */
export async function markPurgeJobReady(webhookId: string, notBefore: number): Promise<void> {
  await updateItem({
    TableName: tableName(),
    Key: purgeJobKey(webhookId),
    UpdateExpression: 'SET ready = :true, notBefore = :notBefore',
    ExpressionAttributeValues: { ':true': true, ':notBefore': notBefore },
  });
}

export async function deletePurgeJob(webhookId: string): Promise<void> {
  await deleteItem({ TableName: tableName(), Key: purgeJobKey(webhookId) });
}

/** Up to `limit` recorded purge jobs. */
export async function queryPurgeJobs(limit: number): Promise<PurgeJob[]> {
  const { items } = await queryItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': PURGES_PARTITION },
    ConsistentRead: true,
    Limit: limit,
  });
  return items as unknown as PurgeJob[];
}

/** A job's lease: its expiry is what names its holder. */
const purgeLeaseSite = (webhookId: string): LeaseSite => ({
  key: purgeJobKey(webhookId),
  holder: 'leaseExpiresAt',
  expiresAt: 'leaseExpiresAt',
  kept: 'in an item',
});

/** Takes the job's lease until `expiresAt` (when free or run out); false when another process holds it or the job is gone. */
export async function takePurgeLease(webhookId: string, expiresAt: number, now: number): Promise<boolean> {
  return (await takeLease(purgeLeaseSite(webhookId), expiresAt, expiresAt, now)) !== undefined;
}

/** Moves the lease held until `heldUntil` on to `next`; false when another process took it over. */
export function renewPurgeLease(webhookId: string, heldUntil: number, next: number): Promise<boolean> {
  return renewLease(purgeLeaseSite(webhookId), heldUntil, next);
}

export function releasePurgeLease(webhookId: string, heldUntil: number): Promise<boolean> {
  return releaseLease(purgeLeaseSite(webhookId), heldUntil);
}

