import * as z from './zod';
import { webhookStatus } from './fields';
import { endpointState } from './deliveries';

/** Statistics are kept as long as the delivery log: 30 days of hours. */
export const MAX_STATS_HOURS = 720;
export const DEFAULT_STATS_HOURS = 24;

const hoursMessage = `must be a whole number of hours from 1 to ${MAX_STATS_HOURS}`;

export const statsQuery = z.strictObject({
  hours: z
    .string()
    .regex(/^[0-9]{1,4}$/, { error: hoursMessage })
    .transform(Number)
    .pipe(z.number().int().min(1, { error: hoursMessage }).max(MAX_STATS_HOURS, { error: hoursMessage }))
    .default(DEFAULT_STATS_HOURS)
    .meta({ type: 'integer', minimum: 1, maximum: MAX_STATS_HOURS, description: 'How many hours back, the current one included' }),
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

export const webhookStats = z.object({
  webhookId: z.string(),
  ...statsWindow,
  lastFailure: z
    .object({ at: z.number().int(), error: z.string(), statusCode: z.number().int().optional() })
    .optional()
    .describe("The window's last failed attempt"),
  endpoint: endpointState,
});
export type WebhookStats = z.infer<typeof webhookStats>;

export const failingWebhook = z.object({
  webhookId: z.string(),
  name: z.string(),
  url: z.string(),
  status: webhookStatus,
  failedAttempts: z.number().int().describe("The window's attempts that failed (pending + failed)"),
  lastFailure: z.object({ at: z.number().int(), error: z.string(), statusCode: z.number().int().optional() }),
  endpoint: endpointState,
});

export const accountStats = z.object({
  ...statsWindow,
  failingWebhooks: z
    .array(failingWebhook)
    .describe('Webhooks with a failed attempt in the window, the most recent failure first: at most 25'),
});
export type AccountStats = z.infer<typeof accountStats>;
