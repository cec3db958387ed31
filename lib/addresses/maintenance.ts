/**
 * The background work of watched addresses, run by a scheduled function on AWS and by a loop beside
 * the API in `npm start`: completing address changes a crash cut off, and purging deleted webhooks.
 */
import { runtimeConfig } from '../config/runtime';
import { addressChangesStartedBefore } from '../store/addresses';
import { completeInterruptedChange } from './address-changes';
import { ensurePurgeJob, runPurges } from './purge';

export interface MaintenanceResult {
  changesCompleted: number;
  purgesFinished: number;
  /** Whether the pass stopped at its deadline with work left that can go on at once. */
  unfinished: boolean;
}

/** One pass, until `deadline`: what it leaves is taken up by the next. */
export async function runAddressMaintenance(deadline: number): Promise<MaintenanceResult> {
  // A change whose lease has been free for a whole lease is not under way any more.
  const changes = await addressChangesStartedBefore(Date.now() - 2 * runtimeConfig().leaseSeconds * 1000, 100);
  let changesCompleted = 0;
  for (const change of changes) {
    if (Date.now() >= deadline) break;
    const outcome = await completeInterruptedChange(change);
    if (outcome === 'completed') changesCompleted += 1;
    // A change of a webhook deleted since: its purge job removes what it wrote (recorded if missing).
    if (outcome === 'webhook deleted') await ensurePurgeJob(change);
  }
  const { finished: purgesFinished, unfinished } = await runPurges(deadline);
  return { changesCompleted, purgesFinished, unfinished };
}
