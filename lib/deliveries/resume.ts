import { queryParkedMessages, type MessageState } from '../store/messages';
import { deleteResumeJob, dueResumeJobs, putResumeJob, saveResumeCursor, scheduleResumeRecheck, type ResumeJob } from '../store/resume-jobs';
import { getWebhookItem } from '../store/webhooks';
import { queueAgainNow, type QueueSender, type Requeue } from './queue';

/** How long after an activation its job reads the parked messages once more: longer than an index takes to show a write. */
export const RESUME_SETTLE_MS = 30_000;
/** How soon a job that found its webhook still inactive looks again, while the activation it was written for may be landing. */
const ACTIVATION_AWAITED_MS = 1_000;

/** A parked message goes back to where it was in its schedule, unless it changed since it was read. */
export const resumption = (message: MessageState): Requeue => ({ manual: message.manual ?? false, seenNextAttemptAt: message.nextAttemptAt });

/**
 * Records that the webhook's parked messages (those that waited while it was inactive) are to be
 * queued again. Written before the webhook is activated: a crash in between leaves a job that finds
 * the webhook inactive for RESUME_SETTLE_MS and ends, never an active webhook whose messages stay parked.
 */
export async function requestResume(account: string, webhookId: string): Promise<void> {
  await putResumeJob(account, webhookId, Date.now());
}

/** Jobs read at a time. */
const JOBS_PAGE = 25;

/**
 * Works through the resume jobs until none is left or `deadline` passes: for a webhook that is
 * active, each parked message is scheduled for now and queued, a page at a time, the job keeping
 * where it got to, and once more RESUME_SETTLE_MS after the activation. Returns how many messages it queued.
 */
export async function runResumeJobs(deadline: number, queue: QueueSender): Promise<number> {
  let resumed = 0;
  for await (const jobs of dueResumeJobs(JOBS_PAGE)) {
    for (const job of jobs) {
      if (Date.now() >= deadline) return resumed;
      resumed += await runResumeJob(job, deadline, queue);
    }
    if (Date.now() >= deadline) break;
  }
  return resumed;
}

async function runResumeJob(job: ResumeJob, deadline: number, queue: QueueSender): Promise<number> {
  const { account, webhookId } = job;
  const webhook = await getWebhookItem(account, webhookId);
  let resumed = 0;
  let cursor = job.cursor;
  if (webhook?.status === 'active') {
    do {
      const page = await queryParkedMessages(account, webhookId, cursor);
      resumed += (await queueAgainNow(page.messages, resumption, queue)).length;
      cursor = page.lastEvaluatedKey;
      if (cursor && Date.now() >= deadline) {
        await saveResumeCursor(webhookId, cursor);
        return resumed;
      }
    } while (cursor);
  }
  const settled = job.requestedAt + RESUME_SETTLE_MS;
  if (webhook && webhook.status !== 'active' && Date.now() < settled) {
    // Written before the activation: a job run before the webhook's write lands finds it inactive yet. Looked at again soon.
    await scheduleResumeRecheck(job, Math.min(settled, Date.now() + ACTIVATION_AWAITED_MS));
    return resumed;
  }
  if (webhook?.status === 'active' && Date.now() < settled) {
    // gsi2 is eventually consistent: a message parked just before the activation may not show yet.
    // The job reads the parked messages once more, from the start, once the index has settled.
    await scheduleResumeRecheck(job, settled);
    return resumed;
  }
  // Done, unless another activation asked again meanwhile: that job starts over.
  await deleteResumeJob(job);
  return resumed;
}
