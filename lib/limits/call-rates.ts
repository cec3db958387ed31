/**
 * Limits on how often one webhook, and all of an account's together, may be sent test notifications,
 * recovered, or have a message retried: each such call sends at once, so the API's throttle alone would let one account keep
 * a receiver (or the service) busy. And how often an account may create API keys: each is kept for
 * the audit trail, and on AWS makes an API Gateway API key.
 */
import { runtimeConfig } from '../config/runtime';
import { TooManyRequests, webhookNotFound } from '../errors';
import { countCallInWindow, uncountCallInWindow, type CountedCall } from '../store/call-windows';

const MINUTE_MS = 60_000;

/** Per webhook, and for all of an account's webhooks together: a webhook deleted and created again starts afresh only in its own. */
const LIMITED_CALLS: Record<Exclude<CountedCall, 'apiKeyCreation'>, { name: string; perWebhook: () => number; perAccount: () => number }> = {
  testNotification: {
    name: 'test notifications',
    perWebhook: () => runtimeConfig().accountLimits.testNotificationsPerMinute,
    perAccount: () => runtimeConfig().accountLimits.testNotificationsPerMinutePerAccount,
  },
  recover: {
    name: 'recover calls',
    perWebhook: () => runtimeConfig().accountLimits.recoversPerMinute,
    perAccount: () => runtimeConfig().accountLimits.recoversPerMinutePerAccount,
  },
  retry: {
    name: 'retries',
    perWebhook: () => runtimeConfig().accountLimits.retriesPerMinute,
    perAccount: () => runtimeConfig().accountLimits.retriesPerMinutePerAccount,
  },
};

/**
 * Counts one call to the webhook in its minute and in its account's (fixed windows from their first
 * call), or refuses it with a 429 that names the limit and whose Retry-After is when the window ends.
 * A call the account's window refuses is taken back from the webhook's.
 */
export async function countWebhookCall(account: string, webhookId: string, call: keyof typeof LIMITED_CALLS): Promise<void> {
  const { name, perWebhook, perAccount } = LIMITED_CALLS[call];
  const now = Date.now();
  const webhook = { account, webhookId };
  const webhookLimit = perWebhook();
  const inWebhook = await countCallInWindow(webhook, call, { limit: webhookLimit, windowMs: MINUTE_MS, now });
  if ('webhookMissing' in inWebhook) throw webhookNotFound(webhookId);
  if ('windowEndsAt' in inWebhook) throw tooMany(`Too many ${name} for webhook ${webhookId}: at most ${webhookLimit} per minute`, inWebhook.windowEndsAt, now);
  const accountLimit = perAccount();
  const inAccount = await countCallInWindow({ account }, call, { limit: accountLimit, windowMs: MINUTE_MS, now });
  if ('windowEndsAt' in inAccount) {
    await uncountCallInWindow(webhook, call, inWebhook.countedInWindowOf);
    throw tooMany(`Too many ${name} for this account: at most ${accountLimit} per minute for all its webhooks together`, inAccount.windowEndsAt, now);
  }
}

/** Counts one API key creation in the account's minute, or refuses it with a 429 naming the limit. */
export async function countApiKeyCreation(account: string): Promise<void> {
  const now = Date.now();
  const limit = runtimeConfig().accountLimits.apiKeyCreationsPerMinute;
  const counted = await countCallInWindow({ account }, 'apiKeyCreation', { limit, windowMs: MINUTE_MS, now });
  if ('windowEndsAt' in counted) throw tooMany(`Too many API keys created for this account: at most ${limit} per minute`, counted.windowEndsAt, now);
}

function tooMany(limit: string, windowEndsAt: number, now: number): TooManyRequests {
  const seconds = Math.max(1, Math.ceil((windowEndsAt - now) / 1000));
  return new TooManyRequests(seconds, `${limit}; try again in ${seconds} s`);
}
