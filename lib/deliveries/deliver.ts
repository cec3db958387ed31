import { runtimeConfig } from '../config/runtime';
import { logger } from '../logger';
import { sharedSecretGeneratedIfMissing, signingSecretsOf } from '../secrets/shared-secret';
import { readItems } from '../store/batch';
import { deleteItem } from '../store/items';
import { tableName } from '../store/client';
import { conditionHeld } from '../store/conditional-write';
import { claimMessage, recordAttempt, rescheduleMessage, toMessage, type Attempt, type AttemptResult, type Message, type MessageRef } from '../store/messages';
import { messageKey, sharedSecretKey, webhookKey } from '../store/table';
import { toWebhook, updateWebhookItem } from '../store/webhooks';
import type { Webhook } from '../schemas/webhook';
import { queueDeliveries } from './queue';
import { retryDelayMs } from './schedule';
import { sendAttempt } from './send';
import { signatureHeaders, type SigningSecrets } from './signing';
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
  /** Not due yet (a queue message early, or a retry brought forward): try again at `at`. */
  | { kind: 'later'; at: number }
  /** Nothing to do: finished, under way elsewhere, waiting for its webhook, or gone. */
  | { kind: 'none' };

/** Margin beyond the attempt's timeout before another process may take the message up. */
const CLAIM_MARGIN_MS = 5_000;
/** A queue message may arrive this much before the attempt's time and still be taken as due. */
const EARLY_MS = 50;

export async function prepareDelivery(ref: MessageRef, now = Date.now()): Promise<Prepared> {
  const keys = [messageKey(ref.account, ref.webhookId, ref.messageId), webhookKey(ref.account, ref.webhookId), sharedSecretKey(ref.account)];
  const { items } = await readItems(keys);
  const [messageItem, webhookItem, secretItem] = keys.map((key) => items.find((item) => item.pk === key.pk && item.sk === key.sk));
  if (!messageItem) return { kind: 'none' };
  const message = toMessage(messageItem);
  if (message.status !== 'pending' || message.nextAttemptAt === undefined) return { kind: 'none' };
  if (message.claimedUntil !== undefined && message.claimedUntil > now) return { kind: 'none' };
  if (message.nextAttemptAt > now + EARLY_MS) return { kind: 'later', at: message.nextAttemptAt };
  const settings = runtimeConfig().delivery;
  if (!webhookItem) {
    // Deleted permanently: nobody can read its log any more, and nothing may be sent for it.
    await conditionHeld(
      deleteItem({ TableName: tableName(), Key: keys[0]!, ConditionExpression: 'nextAttemptAt = :seen', ExpressionAttributeValues: { ':seen': message.nextAttemptAt } }),
    );
    return { kind: 'none' };
  }
  const webhook = toWebhook(webhookItem);
  if (webhook.status !== 'active') {
    const at = now + settings.inactiveRecheckSeconds * 1000;
    await rescheduleMessage(ref, { at, sweepAt: at, manual: message.manual ?? false, waitingForActivation: true, seenNextAttemptAt: message.nextAttemptAt });
    return { kind: 'none' };
  }
  const secrets = signingSecretsOf(secretItem, settings.secretGraceSeconds, now);
  return { kind: 'ready', delivery: { message, webhook, secrets, host: new URL(webhook.url).host } };
}

/** An attempt's outcome for its caller: when the message's next attempt is due, if it has one. */
export interface Attempted {
  attempt?: Attempt;
  nextAttemptAt?: number;
}

/**
 * One attempt: claims the message, signs it with the account's current secrets, sends it, and
 * records what happened and what follows (success, the next attempt of the schedule, or failure,
 * which deactivates the webhook).
 */
export async function attemptDelivery({ message, webhook, secrets }: Delivery): Promise<Attempted> {
  const config = runtimeConfig();
  const settings = config.delivery;
  const startedAt = Date.now();
  const claimedUntil = startedAt + settings.attemptTimeoutSeconds * 1000 + CLAIM_MARGIN_MS;
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
    timeoutMs: settings.attemptTimeoutSeconds * 1000,
    allowLoopback: config.allowLoopbackTargets,
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
  const recorded = await recordAttempt(message, claimedUntil, attempt, result);
  if (recorded && deactivate) {
    await updateWebhookItem(message.account, message.webhookId, { status: 'inactive' });
    logger.warn('webhook deactivated', { account: message.account, webhookId: message.webhookId, messageId: message.messageId, reason: deactivate });
  }
  return { attempt, nextAttemptAt: recorded && result.status === 'pending' ? result.nextAttemptAt : undefined };
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
  return { result: { status: 'pending', nextAttemptAt, sweepAt: nextAttemptAt + settings.sweepGraceSeconds * 1000 } };
}

/**
 * One message from the queue to its attempt, for the dispatcher function: read, attempted if due,
 * and queued again for its next attempt. Throws when the store fails (the queue then redelivers it).
 */
export async function deliverQueued(ref: MessageRef): Promise<void> {
  const prepared = await prepareDelivery(ref);
  if (prepared.kind === 'later') await queueDeliveries([{ ...ref, at: prepared.at }]);
  if (prepared.kind !== 'ready') return;
  const { nextAttemptAt } = await attemptDelivery(prepared.delivery);
  if (nextAttemptAt !== undefined) await queueDeliveries([{ ...ref, at: nextAttemptAt }]);
}
