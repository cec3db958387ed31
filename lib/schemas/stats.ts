import * as z from './zod';
import { runtimeConfig } from '../config/runtime';
import { webhookStatus } from './fields';
import { endpointState } from './deliveries';

/** Statistics are kept as long as the delivery log (delivery.retentionDays): a window reaches that far back at most, in whole hours. */
const maxStatsHours = () => Math.max(1, Math.floor(runtimeConfig().delivery.retentionDays * 24));
export const DEFAULT_STATS_HOURS = 24;

export const statsQuery = z.strictObject({
  hours: z
    .string()
    .transform((value, ctx) => {
      const max = maxStatsHours();
      const hours = /^[0-9]{1,9}$/.test(value) ? Number(value) : 0;
      if (hours >= 1 && hours <= max) return hours;
      ctx.addIssue({ code: 'custom', message: `must be a whole number of hours from 1 to ${max}` });
      return z.NEVER;
    })
    .default(DEFAULT_STATS_HOURS)
    .meta({
      type: 'integer',
      minimum: 1,
      description: "How many hours back, the current one included: at most the stage's delivery retention in hours (720 with its default of 30 days)",
    }),
});
export type StatsQuery = z.infer<typeof statsQuery>;

const latency = z
  .object({
    p50: z.number().int(),
    p90: z.number().int(),
    p99: z.number().int(),
  })
  .describe("Attempts' durations in milliseconds, from a histogram: each figure is the upper bound of the bucket it falls in");

/** What the delivery attempts of one hour came to. */
export const attemptCounts = z.object({
  attempts: z.number().int().describe('Attempts made: succeeded + pending + failed'),
  succeeded: z.number().int().describe('Attempts that delivered their message'),
  pending: z.number().int().describe('Attempts that failed and left their message pending another attempt'),
  failed: z.number().int().describe('Attempts that failed and left their message failed: out of retries, or refused for good'),
  latencyMs: latency.optional().describe('Absent when no attempt was made'),
});
export type AttemptCounts = z.infer<typeof attemptCounts>;

export const statsHour = attemptCounts.extend({
  hour: z.number().int().describe('The start of the hour, milliseconds since the epoch'),
});

const statsWindow = {
  from: z.number().int().describe('The start of the first hour, milliseconds since the epoch'),
  to: z.number().int().describe('The end of the last (current) hour'),
  hours: z.array(statsHour).describe('Every hour of the window, oldest first, hours without attempts included'),
  totals: attemptCounts.describe('The whole window'),
};

const attemptFailure = z.object({ at: z.number().int(), error: z.string(), statusCode: z.number().int().optional() });
export type AttemptFailure = z.infer<typeof attemptFailure>;

/** The failing webhooks an account's statistics show at most. */
export const MAX_FAILING_WEBHOOKS = 25;
/** The inactive webhooks an account's statistics show at most. */
export const MAX_INACTIVE_WEBHOOKS = 25;

export const deactivation = z
  .object({
    at: z.number().int().describe('Milliseconds since the epoch'),
    by: z.enum(['caller', 'delivery']).describe('caller: a call to the API (DELETE without permanent, or PATCH status inactive); delivery: the service, after a failure'),
    reason: z.string().describe("Why, in words: for delivery, the receiver's 410 Gone or a message out of retries, with that attempt's error"),
  })
  .describe('When and why the webhook was last made inactive; absent while it is active, and for webhooks made inactive before this was kept');
export type Deactivation = z.infer<typeof deactivation>;

export const webhookStats = z.object({
  webhookId: z.string(),
  ...statsWindow,
  lastFailure: attemptFailure.optional().describe("The window's last failed attempt"),
  endpoint: endpointState,
  deactivation: deactivation.optional(),
});
export type WebhookStats = z.infer<typeof webhookStats>;

export const failingWebhook = z.object({
  webhookId: z.string(),
  name: z.string(),
  url: z.string(),
  status: webhookStatus,
  failedAttempts: z.number().int().describe("The window's attempts that failed (pending + failed)"),
  lastFailure: attemptFailure,
  endpoint: endpointState,
});

export const inactiveWebhook = z.object({
  webhookId: z.string(),
  name: z.string(),
  url: z.string(),
  deactivation: deactivation.optional(),
});

export const accountStats = z.object({
  ...statsWindow,
  failingWebhooks: z
    .array(failingWebhook)
    .describe(`Webhooks with a failed attempt in the window, the most recent failure first: at most ${MAX_FAILING_WEBHOOKS}`),
  webhooks: z
    .object({ active: z.number().int(), inactive: z.number().int() })
    .describe(
      "The account's webhooks by status now. A webhook deleted for good is not counted once its addresses are purged, in the background (seconds; longer for many addresses); until then, and while one is being created, it counts as active",
    ),
  inactiveWebhooks: z
    .array(inactiveWebhook)
    .describe(`The inactive webhooks, the most recently created first (as listWebhooks orders them): at most ${MAX_INACTIVE_WEBHOOKS}, each with when and why it was made inactive`),
});
export type AccountStats = z.infer<typeof accountStats>;
