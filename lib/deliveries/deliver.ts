import type { Logger } from '@aws-lambda-powertools/logger';
import { runtimeConfig } from '../config/runtime';
import { logger } from '../logger';
import { sharedSecretGeneratedIfMissing } from '../secrets/shared-secret';
import { readForAttempt } from '../store/attempt-reads';
import { readEventuallyConsistent, type ItemReader } from '../store/batch';
import {
  claimMessage,
  deleteUnsendableMessage,
  parkMessage,
  postponeSweep,
  recordAttempt,
  withBody,
  type Attempt,
  type AttemptResult,
  type Message,
  type MessageRef,
  type MessageState,
} from '../store/messages';
import { retentionEndOf } from '../store/table';
import { getEndpointHealth, originOf, type EndpointHealth } from '../store/endpoint-health';
import { getWebhookItem, updateWebhookItem } from '../store/webhooks';
import type { Webhook } from '../schemas/webhook';
import { queueAgainNow, type QueueSender } from './queue';
import { resumption } from './resume';
import { retryDelayMs } from './schedule';
import { sendAttempt } from './send';
import { signatureHeaders, type SigningSecrets } from './signing';
import type { AttemptOutcome, DeliveryStatsBuffer } from './stats';
import { sweepGraceMs } from './sweep';
import type { Resolver } from './target-guard';
import { USER_AGENT } from './user-agent';

/** What an attempt needs, read at once: the message, its webhook and the account's secrets. */
export interface PreparedAttempt {
  message: Message;
  webhook: Webhook;
  secrets?: SigningSecrets;
  /** The webhook's endpoint (its URL's origin) as its recent attempts left it: whether an attempt may start (admission.ts). */
  endpoint: EndpointHealth;
  origin: string;
}

/** What became of a message asked for by the queue or the sweep, before any attempt. */
export type Prepared =
  | { kind: 'ready'; delivery: PreparedAttempt }
  /** Nothing to do now: finished, under way elsewhere, queued for its time, parked for its webhook, or gone. */
  | { kind: 'none' };

/** Margin beyond the attempt's timeout before another process may take the message up. */
export const CLAIM_MARGIN_MS = 5_000;
/** A queue message may arrive this much before the attempt's time and still be taken as due. */
const EARLY_MS = 50;

/**
 * Reads what an attempt of the message needs, if it is due. One that is not due yet (a queue
 * message early, a retry brought forward) is queued for its time; one whose webhook is inactive is
 * parked; one whose webhook is gone is deleted.
 */
export async function prepareDelivery(ref: MessageRef & { origin?: string }, queue: QueueSender, now = Date.now(), read: ItemReader = readEventuallyConsistent): Promise<Prepared> {
  const settings = runtimeConfig().delivery;
  const { message, webhook, secrets, body, endpoint: namedEndpoint } = await readForAttempt(ref, read, settings.secretGraceSeconds, now);
  if (!message) return { kind: 'none' };
  if (message.status !== 'pending' || message.nextAttemptAt === undefined) return { kind: 'none' };
  if (message.claimedUntil !== undefined && message.claimedUntil > now) return { kind: 'none' };
  if (message.nextAttemptAt > now + EARLY_MS) {
    await queue.send([{ ...ref, at: message.nextAttemptAt, ...(webhook ? { origin: originOf(webhook.url) } : {}) }]);
    return { kind: 'none' };
  }
  if (!webhook) {
    // Deleted permanently: nobody can read its log any more, and nothing may be sent for it.
    await deleteUnsendableMessage(ref, message.nextAttemptAt, now);
    return { kind: 'none' };
  }
  if (webhook.status !== 'active') {
    await park(message, now, queue);
    return { kind: 'none' };
  }
  const origin = originOf(webhook.url);
  // The endpoint's health was read with the rest when the queue message named it and the URL is still there.
  const [withItsBody, endpoint] = await Promise.all([
    withBody(message, body),
    origin === ref.origin && namedEndpoint ? namedEndpoint : getEndpointHealth({ account: ref.account, origin }),
  ]);
  if (!withItsBody) {
    // Its body expired with the retention (a retry of a message that old): nothing can be sent any more.
    await deleteUnsendableMessage(ref, message.nextAttemptAt, now);
    return { kind: 'none' };
  }
  return { kind: 'ready', delivery: { message: withItsBody, webhook, secrets, endpoint, origin } };
}

/** Keeps the sweep off a due message until `until`, put off by admission: no attempt is made or counted. */
export async function deferDelivery({ message }: PreparedAttempt, until: number): Promise<void> {
  await postponeSweep(message, message.sweepAt!, Math.round(until));
}

/**
 * Parks a message of an inactive webhook until its activation queues it again. The webhook is read
 * once more afterwards: activated meanwhile (its resume job perhaps already run), the message is
 * queued again here.
 */
async function park(message: MessageState, now: number, queue: QueueSender): Promise<void> {
  if (!(await parkMessage(message, message.nextAttemptAt!, now))) return;
  if ((await getWebhookItem(message.account, message.webhookId))?.status === 'active') await queueAgainNow([message], resumption, queue);
}

/** An attempt's outcome for its caller; none when another attempt holds the message. */
export interface Attempted {
  attempt?: Attempt;
  /** Whether the receiver took it (2xx). */
  delivered?: boolean;
}

export interface AttemptContext {
  /** Where the next attempt of the schedule is queued. */
  queue: QueueSender;
  /** Locally, the local service's logger: the handlers' one carries the last request's Lambda context. */
  log?: Logger;
  /** The target's addresses, resolved once by the caller (its host slot is keyed by them); absent, resolved when connecting. */
  resolve?: Resolver;
  /** Where the attempt is counted: the buffer its consumer flushes. */
  stats: DeliveryStatsBuffer;
}

/**
 * One attempt: claims the message, signs it with the account's current secrets, sends it, and
 * records what happened and what follows (success, the next attempt of the schedule, queued for its
 * time, or failure, which deactivates the webhook), logs it and counts it in the statistics.
 */
export async function attemptDelivery(
  { message, webhook, secrets, origin }: PreparedAttempt,
  { queue, log = logger, resolve, stats }: AttemptContext,
): Promise<Attempted> {
  const config = runtimeConfig();
  const settings = config.delivery;
  const startedAt = Date.now();
  const claimedUntil = startedAt + Math.round(settings.attemptTimeoutSeconds * 1000) + CLAIM_MARGIN_MS;
  if (!(await claimMessage(message, message.nextAttemptAt!, startedAt, claimedUntil, message.sweepAt))) return {};
  const signing = secrets ?? (await sharedSecretGeneratedIfMissing(message.account));
  const headers = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    ...signatureHeaders({ body: message.body, messageId: message.messageId, timestamp: Math.floor(Date.now() / 1000), secrets: signing }),
  };
  const outcome = await sendAttempt({
    url: webhook.url,
    body: message.body,
    headers,
    timeoutMs: Math.round(settings.attemptTimeoutSeconds * 1000),
    loopback: config.loopbackTargets,
    resolve,
  });
  const attempt: Attempt = {
    attemptedAt: startedAt,
    trigger: message.manual ? 'manual' : 'scheduled',
    statusCode: outcome.statusCode,
    error: outcome.error,
    durationMs: outcome.durationMs,
    responseBody: outcome.responseBody,
  };
  const { result, deactivate } = resultOf(message, attempt, outcome);
  // Before the failure is recorded: a crash in between leaves the message to be attempted again
  // (and held, its webhook inactive), never a failure recorded without its deactivation.
  if (deactivate) {
    await updateWebhookItem(message.account, message.webhookId, { status: 'inactive' }, { at: Date.now(), by: 'delivery', reason: deactivate });
    log.warn('webhook deactivated', { account: message.account, webhookId: message.webhookId, messageId: message.messageId, reason: deactivate });
  }
  const recorded = await recordAttempt(message, claimedUntil, attempt, result);
  stats.count({ account: message.account, webhookId: message.webhookId, attempt, outcome: countedOutcome(result, recorded, outcome.delivered) }, Date.now(), log);
  log.info('delivery attempt', {
    account: message.account,
    webhookId: message.webhookId,
    messageId: message.messageId,
    attempt: message.attempts + 1,
    trigger: attempt.trigger,
    statusCode: attempt.statusCode,
    error: attempt.error,
    durationMs: attempt.durationMs,
    next: result.status,
    nextAttemptAt: result.status === 'pending' ? result.nextAttemptAt : undefined,
  });
  if (recorded && result.status === 'pending') {
    await queue.send([{ account: message.account, webhookId: message.webhookId, messageId: message.messageId, at: result.nextAttemptAt, origin }]);
  }
  return { attempt, delivered: outcome.delivered };
}

/**
 * What the attempt left its message. One whose claim was lost (a retry asked for meanwhile) left it
 * to that retry: pending, unless it was delivered.
 */
function countedOutcome(result: AttemptResult, recorded: boolean, delivered: boolean): AttemptOutcome {
  if (recorded) return result.status;
  return delivered ? 'succeeded' : 'pending';
}

/** What the attempt leaves its message and, when it deactivates the webhook, why in words (the webhook keeps it). */
function resultOf(
  message: Message,
  attempt: Attempt,
  outcome: { delivered: boolean; statusCode?: number; retryAfterSeconds?: number },
): { result: AttemptResult; deactivate?: string } {
  const settings = runtimeConfig().delivery;
  const now = Date.now();
  const finished = (status: 'succeeded' | 'failed') => ({ status, expiresAt: retentionEndOf(message.createdAt) });
  if (outcome.delivered) return { result: finished('succeeded') };
  if (attempt.trigger === 'manual') return { result: finished('failed') };
  // Its error ("HTTP 410") would repeat the reason.
  if (outcome.statusCode === 410) return { result: finished('failed'), deactivate: 'the receiver answered 410 Gone' };
  const delay = retryDelayMs(settings.retryScheduleSeconds, message.scheduledAttempts + 1, outcome.retryAfterSeconds);
  if (delay === undefined) return { result: finished('failed'), deactivate: `a message failed its last attempt: ${attempt.error ?? 'no error recorded'}` };
  const nextAttemptAt = now + delay;
  return { result: { status: 'pending', nextAttemptAt, sweepAt: nextAttemptAt + sweepGraceMs() } };
}
