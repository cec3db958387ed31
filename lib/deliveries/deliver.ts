import type { Logger } from '@aws-lambda-powertools/logger';
import { runtimeConfig } from '../config/runtime';
import { logger } from '../logger';
import { sharedSecretGeneratedIfMissing, signingSecretsOf } from '../secrets/shared-secret';
import { readItems } from '../store/batch';
import {
  claimMessage,
  deleteUnsendableMessage,
  parkMessage,
  postponeSweep,
  recordAttempt,
  toMessage,
  type Attempt,
  type AttemptResult,
  type Message,
  type MessageRef,
} from '../store/messages';
import { messageKey, sharedSecretKey, webhookKey } from '../store/table';
import { getWebhookItem, toWebhook, updateWebhookItem } from '../store/webhooks';
import type { Webhook } from '../schemas/webhook';
import { queueAgainNow, queueDeliveries } from './queue';
import { resumption } from './resume';
import { retryDelayMs } from './schedule';
import { sendAttempt } from './send';
import { signatureHeaders, type SigningSecrets } from './signing';
import { sweepGraceMs } from './sweep';
import { USER_AGENT } from './user-agent';

/** What an attempt needs, read in one batch: the message, its webhook and the account's secrets. */
export interface Delivery {
  message: Message;
  webhook: Webhook;
  secrets?: SigningSecrets;
  /** The target's host: attempts under way are limited per host. */
  host: string;
}

/** What became of a message asked for by the queue or the sweep, before any attempt. */
export type Prepared =
  | { kind: 'ready'; delivery: Delivery }
  /** Nothing to do now: finished, under way elsewhere, queued for its time, parked for its webhook, or gone. */
  | { kind: 'none' };

/** Margin beyond the attempt's timeout before another process may take the message up. */
const CLAIM_MARGIN_MS = 5_000;
/** A queue message may arrive this much before the attempt's time and still be taken as due. */
const EARLY_MS = 50;

/**
 * Reads what an attempt of the message needs, if it is due. One that is not due yet (a queue
 * message early, a retry brought forward) is queued for its time; one whose webhook is inactive is
 * parked; one whose webhook is gone is deleted.
 */
export async function prepareDelivery(ref: MessageRef, now = Date.now()): Promise<Prepared> {
  const keys = [messageKey(ref.account, ref.webhookId, ref.messageId), webhookKey(ref.account, ref.webhookId), sharedSecretKey(ref.account)];
  const { items } = await readItems(keys);
  const [messageItem, webhookItem, secretItem] = keys.map((key) => items.find((item) => item.pk === key.pk && item.sk === key.sk));
  if (!messageItem) return { kind: 'none' };
  const message = toMessage(messageItem);
  if (message.status !== 'pending' || message.nextAttemptAt === undefined) return { kind: 'none' };
  if (message.claimedUntil !== undefined && message.claimedUntil > now) return { kind: 'none' };
  if (message.nextAttemptAt > now + EARLY_MS) {
    await queueDeliveries([{ ...ref, at: message.nextAttemptAt }]);
    return { kind: 'none' };
  }
  const settings = runtimeConfig().delivery;
  if (!webhookItem) {
    // Deleted permanently: nobody can read its log any more, and nothing may be sent for it.
    await deleteUnsendableMessage(ref, message.nextAttemptAt, now);
    return { kind: 'none' };
  }
  const webhook = toWebhook(webhookItem);
  if (webhook.status !== 'active') {
    await park(message, now);
    return { kind: 'none' };
  }
  const secrets = signingSecretsOf(secretItem, settings.secretGraceSeconds, now);
  return { kind: 'ready', delivery: { message, webhook, secrets, host: new URL(webhook.url).host } };
}

/** Leaves a due message to the sweep until `until`, its host busy: no attempt is made or counted. */
export async function deferDelivery({ message }: Delivery, until: number): Promise<void> {
  await postponeSweep(message, message.sweepAt!, Math.round(until));
}

/**
 * Parks a message of an inactive webhook until its activation queues it again. The webhook is read
 * once more afterwards: activated meanwhile (its resume job perhaps already run), the message is
 * queued again here.
 */
async function park(message: Message, now: number): Promise<void> {
  if (!(await parkMessage(message, message.nextAttemptAt!, now))) return;
  if ((await getWebhookItem(message.account, message.webhookId))?.status === 'active') await queueAgainNow([message], resumption);
}

/** An attempt's outcome for its caller; none when another attempt holds the message. */
export interface Attempted {
  attempt?: Attempt;
}

/**
 * One attempt: claims the message, signs it with the account's current secrets, sends it, and
 * records what happened and what follows (success, the next attempt of the schedule, queued for its
 * time, or failure, which deactivates the webhook). Logs each attempt to `log` (locally, the local service's logger:
 * the handlers' one carries the last request's Lambda context).
 */
export async function attemptDelivery({ message, webhook, secrets }: Delivery, log: Logger = logger): Promise<Attempted> {
  const config = runtimeConfig();
  const settings = config.delivery;
  const startedAt = Date.now();
  const claimedUntil = startedAt + Math.round(settings.attemptTimeoutSeconds * 1000) + CLAIM_MARGIN_MS;
  if (!(await claimMessage(message, message.nextAttemptAt!, startedAt, claimedUntil))) return {};
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
    await updateWebhookItem(message.account, message.webhookId, { status: 'inactive' });
    log.warn('webhook deactivated', { account: message.account, webhookId: message.webhookId, messageId: message.messageId, reason: deactivate });
  }
  const recorded = await recordAttempt(message, claimedUntil, attempt, result);
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
  });
  if (recorded && result.status === 'pending') {
    await queueDeliveries([{ account: message.account, webhookId: message.webhookId, messageId: message.messageId, at: result.nextAttemptAt }]);
  }
  return { attempt };
}

function resultOf(
  message: Message,
  attempt: Attempt,
  outcome: { delivered: boolean; statusCode?: number; retryAfterSeconds?: number },
): { result: AttemptResult; deactivate?: string } {
  const settings = runtimeConfig().delivery;
  const now = Date.now();
  const finished = (status: 'succeeded' | 'failed') => ({ status, expiresAt: Math.floor(message.createdAt / 1000) + settings.retentionDays * 86_400 });
  if (outcome.delivered) return { result: finished('succeeded') };
  if (attempt.trigger === 'manual') return { result: finished('failed') };
  if (outcome.statusCode === 410) return { result: finished('failed'), deactivate: 'the receiver answered 410 Gone' };
  const delay = retryDelayMs(settings.retryScheduleSeconds, message.scheduledAttempts + 1, outcome.retryAfterSeconds);
  if (delay === undefined) return { result: finished('failed'), deactivate: 'a message failed its last attempt' };
  const nextAttemptAt = now + delay;
  return { result: { status: 'pending', nextAttemptAt, sweepAt: nextAttemptAt + sweepGraceMs() } };
}

/**
 * One message from the queue to its attempt: read, and attempted if due. Throws when the store
 * fails (the queue, or the sweep, brings it back).
 */
export async function deliverQueued(ref: MessageRef, log: Logger = logger): Promise<Attempted> {
  const prepared = await prepareDelivery(ref);
  return prepared.kind === 'ready' ? attemptDelivery(prepared.delivery, log) : {};
}
