/**
 * A webhook's backfills through the API: started, listed, read and cancelled. The chain's backfill
 * runner (runner.ts) does the work; here are the limits and the records (docs/backfills.md).
 */
import { v7 as uuidv7 } from 'uuid';
import { pageTokenKey } from '../config/page-token-key';
import { runtimeConfig } from '../config/runtime';
import { BadRequest, NotFound, webhookNotFound } from '../errors';
import { logger } from '../logger';
import { pageTokens } from '../page-token';
import type { Backfill, BackfillList, CreateBackfillInput, ListBackfillsQuery } from '../schemas/backfills';
import {
  claimRunningBackfill,
  deleteBackfillsBeyond,
  endBackfill,
  getBackfill as getBackfillRecord,
  putNewBackfill,
  queryBackfills,
  releaseRunningBackfill,
  type BackfillRecord,
  type RunningBackfills,
} from '../store/backfills';
import { getCheckpoint } from '../store/chains';
import { getWebhookItem } from '../store/webhooks';
import { uuidv7Time } from '../uuid';

/** A running slot whose backfill item is missing may be one being created: left alone this long. */
const CREATION_GRACE_MS = 60_000;

export const CANCELLED_REASON = 'cancelled by a DELETE call';

export const toBackfill = ({ account: _account, ...record }: BackfillRecord): Backfill => record;

const backfillNotFound = (id: string) => new NotFound(`Backfill ${id} not found`);

/**
 * Starts a backfill of the webhook from `fromBlock` to `toBlock` (by default the chain's checkpoint,
 * after which the live follower notifies): recorded as running, for the chain's runner to take up.
 */
export async function createBackfill(account: string, webhookId: string, { fromBlock, toBlock }: CreateBackfillInput, now = Date.now()): Promise<Backfill> {
  const webhook = await getWebhookItem(account, webhookId);
  if (!webhook) throw webhookNotFound(webhookId);
  if (webhook.status !== 'active') throw new BadRequest(`Webhook ${webhookId} is inactive: activate it (PATCH {"status":"active"}) to backfill it`);
  const { chainId } = webhook;
  if (!runtimeConfig().followedChains.some((chain) => chain.chainId === chainId)) {
    throw new BadRequest(`Webhook ${webhookId} is on chain ${chainId}, which this service does not follow (GET /v1/chains lists those it does): there is nothing to backfill from`);
  }
  const checkpoint = await getCheckpoint(chainId);
  if (!checkpoint) throw new BadRequest(`Chain ${chainId} is not followed yet (no checkpoint): retry once GET /v1/chains shows its checkpointBlock`);
  const settings = runtimeConfig().backfills;
  const to = toBlock ?? checkpoint.number;
  if (to > checkpoint.number) {
    throw new BadRequest(`Invalid body field toBlock: must be at most ${checkpoint.number}, chain ${chainId}'s checkpoint (the live follower notifies the blocks after it), got ${to}`);
  }
  if (fromBlock > to) {
    const given = toBlock === undefined ? `${to}: by default chain ${chainId}'s checkpoint, after which the live follower notifies` : String(to);
    throw new BadRequest(`Invalid body field fromBlock: must be at most toBlock (${given}), got ${fromBlock}`);
  }
  const blocks = to - fromBlock + 1;
  if (blocks > settings.maxBlocks) {
    throw new BadRequest(`Invalid body field fromBlock: a backfill covers at most ${settings.maxBlocks} blocks (the backfills.maxBlocks limit), from ${fromBlock} to ${to} is ${blocks}: split the range`);
  }
  const backfillId = uuidv7();
  await claimRunningSlot(account, webhookId, backfillId, settings.runningPerAccount, now);
  const record: BackfillRecord = {
    account,
    webhookId,
    backfillId,
    chainId,
    status: 'running',
    fromBlock,
    toBlock: to,
    nextBlock: fromBlock,
    notifications: 0,
    createdAt: now,
    updatedAt: now,
  };
  try {
    await putNewBackfill(record);
  } catch (error) {
    await releaseRunningBackfill(account, webhookId, backfillId).catch(() => undefined);
    throw error;
  }
  try {
    await deleteBackfillsBeyond(account, webhookId, settings.keptPerWebhook);
  } catch (error) {
    logger.warn("a webhook's oldest backfills not deleted; deleted at its next backfill", { errorName: (error as Error).name });
  }
  return toBackfill(record);
}

/**
 * Claims the account's running slot for the webhook, freeing first the slots of backfills that ended
 * without freeing theirs (a crash between the two writes). A refusal is a 400 naming its limit.
 */
async function claimRunningSlot(account: string, webhookId: string, backfillId: string, max: number, now: number): Promise<void> {
  let running: RunningBackfills | undefined;
  for (let round = 0; round < 2; round += 1) {
    running = await claimRunningBackfill(account, webhookId, backfillId, max);
    if (!running) return;
    const stale = await staleSlots(account, running, now);
    if (stale.length === 0) break;
    await Promise.all(stale.map(([webhook, backfill]) => releaseRunningBackfill(account, webhook, backfill)));
  }
  const own = running?.[webhookId];
  if (own) {
    throw new BadRequest(
      `Webhook ${webhookId} has a running backfill (${own}): one runs at a time per webhook (the backfills limit); cancel it (DELETE /v1/webhooks/${webhookId}/backfills/${own}) or wait for it to end`,
    );
  }
  const cancels = Object.entries(running ?? {}).map(([webhook, backfill]) => `DELETE /v1/webhooks/${webhook}/backfills/${backfill}`);
  throw new BadRequest(
    `At most ${max} backfill${max === 1 ? '' : 's'} run${max === 1 ? 's' : ''} at once per account (the backfills.runningPerAccount limit): wait for one to end, or cancel one (${cancels.join(', ')})`,
  );
}

async function staleSlots(account: string, running: RunningBackfills, now: number): Promise<[string, string][]> {
  const entries = Object.entries(running);
  const records = await Promise.all(entries.map(([webhookId, backfillId]) => getBackfillRecord(account, webhookId, backfillId)));
  return entries.filter(([, backfillId], index) => {
    const record = records[index];
    return record ? record.status !== 'running' : now - uuidv7Time(backfillId) > CREATION_GRACE_MS;
  });
}

export async function listBackfills(account: string, webhookId: string, { pageSize, pageToken }: ListBackfillsQuery): Promise<BackfillList> {
  const key = await pageTokenKey();
  const afterId = pageToken === undefined ? undefined : pageTokens.backfills.decode(key, { account, webhookId }, pageToken);
  if (!(await getWebhookItem(account, webhookId))) throw webhookNotFound(webhookId);
  const { backfills, more } = await queryBackfills(account, webhookId, pageSize, afterId);
  const last = backfills.at(-1);
  return {
    backfills: backfills.map(toBackfill),
    nextPageToken: more && last ? pageTokens.backfills.encode(key, { account, webhookId }, last.backfillId) : undefined,
  };
}

export async function getBackfill(account: string, webhookId: string, backfillId: string): Promise<Backfill> {
  const record = await getBackfillRecord(account, webhookId, backfillId);
  if (!record) {
    if (!(await getWebhookItem(account, webhookId))) throw webhookNotFound(webhookId);
    throw backfillNotFound(backfillId);
  }
  return toBackfill(record);
}

/** Stops a running backfill; what it recorded stays recorded. One that had ended already is answered as it is. */
export async function cancelBackfill(account: string, webhookId: string, backfillId: string): Promise<Backfill> {
  const record = await getBackfillRecord(account, webhookId, backfillId);
  if (!record) {
    if (!(await getWebhookItem(account, webhookId))) throw webhookNotFound(webhookId);
    throw backfillNotFound(backfillId);
  }
  if (record.status !== 'running') return toBackfill(record);
  const ended = (await endBackfill(record, 'cancelled', CANCELLED_REASON)) ?? (await getBackfillRecord(account, webhookId, backfillId))!;
  await releaseRunningBackfill(account, webhookId, backfillId);
  return toBackfill(ended);
}
