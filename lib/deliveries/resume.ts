import { tableName } from '../store/client';
import { conditionHeld } from '../store/conditional-write';
import { deleteItem, putItem, queryItems, updateItem, type Item } from '../store/items';
import { queryParkedMessages, type MessageState } from '../store/messages';
import { RESUMES_PARTITION, resumeJobKey, webhookIdOfSortKey } from '../store/table';
import { getWebhookItem } from '../store/webhooks';
import { queueAgainNow, type QueueSender, type Requeue } from './queue';

/** How long after an activation its job reads the parked messages once more: longer than an index takes to show a write. */
export const RESUME_SETTLE_MS = 30_000;

/** A parked message goes back to where it was in its schedule, unless it changed since it was read. */
export const resumption = (message: MessageState): Requeue => ({ manual: message.manual ?? false, seenNextAttemptAt: message.nextAttemptAt });

/**
 * Records that the webhook's parked messages (those that waited while it was inactive) are to be
 * queued again. Written before the webhook is activated: a crash in between leaves a job that finds
 * the webhook inactive and ends, never an active webhook whose messages stay parked.
 */
export async function requestResume(account: string, webhookId: string): Promise<void> {
  await putItem({ TableName: tableName(), Item: { ...resumeJobKey(webhookId), account, requestedAt: Date.now() } });
}

/**
 * Works through the resume jobs until none is left or `deadline` passes: for a webhook that is
 * active, each parked message is scheduled for now and queued, a page at a time, the job keeping
 * where it got to, and once more RESUME_SETTLE_MS after the activation. Returns how many messages it queued.
 */
export async function runResumeJobs(deadline: number, queue: QueueSender): Promise<number> {
  let resumed = 0;
  let startKey: Item | undefined;
  do {
    // A job that ran once waits for its second run (`recheckAt`) without holding up the others.
    const page = await queryItems({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      FilterExpression: 'attribute_not_exists(recheckAt) OR recheckAt <= :now',
      ExpressionAttributeValues: { ':pk': RESUMES_PARTITION, ':now': Date.now() },
      Limit: 25,
      ExclusiveStartKey: startKey,
    });
    for (const job of page.items) {
      if (Date.now() >= deadline) return resumed;
      resumed += await runResumeJob(job, deadline, queue);
    }
    startKey = page.lastEvaluatedKey;
  } while (startKey && Date.now() < deadline);
  return resumed;
}

async function runResumeJob(job: Item, deadline: number, queue: QueueSender): Promise<number> {
  const account = job.account as string;
  const webhookId = webhookIdOfSortKey(job.sk as string);
  const webhook = await getWebhookItem(account, webhookId);
  let resumed = 0;
  let cursor = job.cursor as Item | undefined;
  if (webhook?.status === 'active') {
    do {
      const page = await queryParkedMessages(account, webhookId, cursor);
      resumed += (await queueAgainNow(page.messages, resumption, queue)).length;
      cursor = page.lastEvaluatedKey;
      if (cursor && Date.now() >= deadline) {
        await updateItem({ TableName: tableName(), Key: resumeJobKey(webhookId), UpdateExpression: 'SET #cursor = :cursor', ExpressionAttributeNames: { '#cursor': 'cursor' }, ExpressionAttributeValues: { ':cursor': cursor } });
        return resumed;
      }
    } while (cursor);
  }
  const settled = (job.requestedAt as number) + RESUME_SETTLE_MS;
  if (webhook?.status === 'active' && Date.now() < settled) {
    // gsi2 is eventually consistent: a message parked just before the activation may not show yet.
    // The job reads the parked messages once more, from the start, once the index has settled.
    await conditionHeld(
      updateItem({
        TableName: tableName(),
        Key: resumeJobKey(webhookId),
        UpdateExpression: 'SET recheckAt = :settled REMOVE #cursor',
        ConditionExpression: 'requestedAt = :requestedAt',
        ExpressionAttributeNames: { '#cursor': 'cursor' },
        ExpressionAttributeValues: { ':requestedAt': job.requestedAt, ':settled': settled },
      }),
    );
    return resumed;
  }
  // Done, unless another activation asked again meanwhile: that job starts over.
  await conditionHeld(
    deleteItem({
      TableName: tableName(),
      Key: resumeJobKey(webhookId),
      ConditionExpression: 'requestedAt = :requestedAt',
      ExpressionAttributeValues: { ':requestedAt': job.requestedAt },
    }),
  );
  return resumed;
}
