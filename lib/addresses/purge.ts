/**
 * Permanent deletion: the webhook's item goes at once; its addresses and their index entries (up to
 * a million of each) are purged in the background by a resumable job, which deletes a page of
 * addresses' index entries before the addresses themselves, so that a job cut off anywhere is
 * completed by running it again.
 */
import { runtimeConfig } from '../config/runtime';
import { uncountWebhook } from '../limits/account-limits';
import { addressLeaseExpiryOf, deleteAddressChange, getAddressChange, queryWebhookAddresses, webhookAddressWrites } from '../store/addresses';
import { deleteWebhookBackfills } from '../store/backfills';
import { forEachChunk, writeItems } from '../store/batch';
import {
  deletePurgeJob,
  markPurgeJobReady,
  putPurgeJob,
  putPurgeJobIfMissing,
  queryPurgeJobs,
  releasePurgeLease,
  renewPurgeLease,
  takePurgeLease,
  type PurgeJob,
} from '../store/purge-jobs';
import { deleteHeadIfUnchanged, headWrites, watchState, watcherWrites } from '../store/watch-index';
import { deleteWebhookPointer } from '../store/webhook-pointers';
import { deleteWebhookItem, webhookChainId } from '../store/webhooks';

/** Addresses purged between two checks of the job's lease and deadline. */
const PAGE = 1_000;
const HEAD_CHECKS_IN_PARALLEL = 16;

const leaseMs = () => runtimeConfig().leaseSeconds * 1000;

/**
 * Deletes the webhook's item, with a purge job for the rest recorded first, so that no crash can
 * leave addresses of a webhook that no longer exists with nothing to purge them. Returns the item as
 * it was; undefined when there was none.
 */
export async function deleteWebhookPermanently(account: string, webhookId: string): Promise<Record<string, any> | undefined> {
  const chainId = await webhookChainId(account, webhookId);
  if (chainId === undefined) return undefined;
  const now = Date.now();
  await putPurgeJob({ account, webhookId, chainId, ready: false, createdAt: now, notBefore: now });
  const deleted = await deleteWebhookItem(account, webhookId);
  if (!deleted) {
    await deletePurgeJob(webhookId);
    return undefined;
  }
  await markPurgeJobReady(webhookId, Math.max(now, addressLeaseExpiryOf(deleted) ?? 0));
  // Its slot and addresses stay counted until its purge has removed them (below): freed at once, a
  // loop of create and delete would pile up items waiting for the purge beyond the account's limits.
  return deleted;
}

/** Records a purge for the addresses of a webhook that no longer exists, unless one is recorded. */
export async function ensurePurgeJob({ account, webhookId, chainId }: Pick<PurgeJob, 'account' | 'webhookId' | 'chainId'>): Promise<void> {
  const now = Date.now();
  await putPurgeJobIfMissing({ account, webhookId, chainId, ready: true, createdAt: now, notBefore: now + leaseMs() });
}

/** Takes the job's lease (when free or expired); returns its expiry, undefined when another process holds it. */
async function claim(job: PurgeJob, now: number): Promise<number | undefined> {
  const expiresAt = now + leaseMs();
  return (await takePurgeLease(job.webhookId, expiresAt, now)) ? expiresAt : undefined;
}

/** Whether a job is due; an unready one whose deletion crashed is dropped if the webhook still exists. */
async function isDue(job: PurgeJob, now: number): Promise<boolean> {
  if (job.ready) return job.notBefore <= now;
  if (job.createdAt + leaseMs() > now) return false; // its deletion may still be under way
  if ((await webhookChainId(job.account, job.webhookId)) === undefined) return true;
  await deletePurgeJob(job.webhookId);
  return false;
}

/**
 * Runs the due purge jobs until `deadline`; a job not finished by then is taken up again by the next
 * run, of this process or another. Returns how many jobs it finished, and whether it left one unfinished.
 */
export async function runPurges(deadline: number): Promise<{ finished: number; unfinished: boolean }> {
  let finished = 0;
  let unfinished = false;
  for (const job of await queryPurgeJobs(100)) {
    const now = Date.now();
    if (now >= deadline) return { finished, unfinished: true };
    if (!(await isDue(job, now))) continue;
    const heldUntil = await claim(job, now);
    if (heldUntil === undefined) continue;
    if (await purge(job, heldUntil, deadline)) {
      await deletePurgeJob(job.webhookId);
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
      await releasePurgeLease(job.webhookId, heldUntil);
      return false;
    }
    const next = Date.now() + leaseMs();
    if (!(await renewPurgeLease(job.webhookId, heldUntil, next))) return false;
    heldUntil = next;
    const { addresses } = await queryWebhookAddresses(job.account, job.webhookId, PAGE);
    if (addresses.length === 0) break;
    await purgeAddresses(job, addresses);
  }
  if (leftover) await deleteAddressChange(leftover);
  await deleteWebhookBackfills(job.account, job.webhookId);
  await uncountWebhook(job.account, job.webhookId);
  await deleteWebhookPointer(job.webhookId);
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
  await forEachChunk(addresses, 1, HEAD_CHECKS_IN_PARALLEL, async ([address]) => {
    const { headToken, watched } = await watchState(job.chainId, address!);
    if (watched) stillWatched.push(address!);
    else if (headToken !== undefined) await deleteHeadIfUnchanged(job.chainId, address!, headToken);
  });
  await writeItems(headWrites(job.chainId, stillWatched));
  await writeItems(webhookAddressWrites(job.account, job.webhookId, addresses, 'remove'));
}
