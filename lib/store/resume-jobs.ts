/**
 * Resume jobs: a webhook's parked messages (those that waited while it was inactive) to be queued
 * again, recorded before the webhook is activated. A job keeps where it got to (`cursor`, a gsi2 key).
 */
import { tableName } from './client';
import { conditionHeld } from './conditional-write';
import { deleteItem, putItem, queryPages, updateItem, type Item } from './items';
import { RESUMES_PARTITION, resumeJobKey, webhookIdOfSortKey } from './table';

export interface ResumeJob {
  account: string;
  webhookId: string;
  requestedAt: number;
  /** Where the job's read of the parked messages got to; absent at its start. */
  cursor?: Item;
}

export async function putResumeJob(account: string, webhookId: string, requestedAt: number): Promise<void> {
  await putItem({ TableName: tableName(), Item: { ...resumeJobKey(webhookId), account, requestedAt } });
}

const toResumeJob = (item: Item): ResumeJob => ({
  account: item.account,
  webhookId: webhookIdOfSortKey(item.sk as string),
  requestedAt: item.requestedAt,
  cursor: item.cursor,
});

/**
 * The jobs due (each page by the time it is read), a page of `pageSize` at a time: a job that ran
 * once waits for its second run (`recheckAt`) without holding up the others.
 */
export async function* dueResumeJobs(pageSize: number): AsyncGenerator<ResumeJob[]> {
  const pages = queryPages(() => ({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    FilterExpression: 'attribute_not_exists(recheckAt) OR recheckAt <= :now',
    ExpressionAttributeValues: { ':pk': RESUMES_PARTITION, ':now': Date.now() },
    Limit: pageSize,
  }));
  for await (const page of pages) yield page.items.map(toResumeJob);
}

export async function saveResumeCursor(webhookId: string, cursor: Item): Promise<void> {
  await updateItem({
    TableName: tableName(),
    Key: resumeJobKey(webhookId),
    UpdateExpression: 'SET #cursor = :cursor',
    ExpressionAttributeNames: { '#cursor': 'cursor' },
    ExpressionAttributeValues: { ':cursor': cursor },
  });
}

/** The job runs once more, from the start, at `recheckAt`; unless another activation asked again meanwhile (its `requestedAt`). */
export async function scheduleResumeRecheck(job: ResumeJob, recheckAt: number): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: resumeJobKey(job.webhookId),
      UpdateExpression: 'SET recheckAt = :settled REMOVE #cursor',
      ConditionExpression: 'requestedAt = :requestedAt',
      ExpressionAttributeNames: { '#cursor': 'cursor' },
      ExpressionAttributeValues: { ':requestedAt': job.requestedAt, ':settled': recheckAt },
    }),
  );
}

/** Deletes the job, unless another activation asked again meanwhile: that job starts over. */
export async function deleteResumeJob(job: ResumeJob): Promise<boolean> {
  return conditionHeld(
    deleteItem({
      TableName: tableName(),
      Key: resumeJobKey(job.webhookId),
      ConditionExpression: 'requestedAt = :requestedAt',
      ExpressionAttributeValues: { ':requestedAt': job.requestedAt },
    }),
  );
}
