import * as z from './zod';
import { expected, messageId, nextPageToken, pageSize, pageToken, webhookId } from './fields';

export const deliveryStatus = z.enum(['pending', 'succeeded', 'failed'], { error: expected("must be 'pending', 'succeeded' or 'failed'") });
export type DeliveryStatus = z.infer<typeof deliveryStatus>;

export const deliveryPath = z.strictObject({ id: webhookId, messageId });

export const listDeliveriesQuery = z.strictObject({ pageToken, pageSize, status: deliveryStatus.optional() });
export type ListDeliveriesQuery = z.infer<typeof listDeliveriesQuery>;

/** A message in a webhook's delivery log, with its latest attempt. Times are milliseconds since the epoch. */
export const delivery = z.object({
  messageId: z.string(),
  eventType: z.string(),
  createdAt: z.number().int(),
  status: deliveryStatus,
  attempts: z.number().int().describe('Attempts made, manual ones included'),
  nextAttemptAt: z.number().int().optional().describe('When pending: when the next attempt is due'),
  waitingForActivation: z.boolean().optional().describe('When pending and the webhook is inactive: the message is sent once the webhook is activated'),
  attemptUnderWay: z.boolean().optional().describe('When an attempt is under way (a retry asked for now is a 409)'),
  lastAttemptAt: z.number().int().optional(),
  lastResponseStatusCode: z.number().int().optional().describe("The last attempt's response status, when a response came"),
  lastDurationMs: z.number().int().optional(),
  lastError: z.string().optional().describe('Why the last attempt failed: the status, a timeout, a refused connection, a refused target'),
  backfillId: z.string().optional().describe('When a backfill recorded it (rather than the live follower): its id'),
  transactionHash: z
    .string()
    .optional()
    .describe("The transaction the notification is about (its payload's transaction.txHash); absent on messages recorded before the log kept it"),
  blockNumber: z
    .string()
    .optional()
    .describe('The number of that transaction\'s block, a decimal string as the payload has it; "0" for a test notification'),
});
export type Delivery = z.infer<typeof delivery>;

/** What the recent attempts to the webhook's URL showed. Times are milliseconds since the epoch. */
export const endpointState = z
  .object({
    status: z.enum(['healthy', 'failing']).describe("failing: the last attempts failed; healthy: the last one was delivered (or none was made)"),
    failingSince: z.number().int().optional().describe('When failing: when the first of the failed attempts since the last delivered one was made'),
    consecutiveFailures: z.number().int().optional().describe('When failing: attempts failed since the last delivered one'),
    circuitOpen: z
      .boolean()
      .optional()
      .describe('When failing: so many attempts failed that one attempt at a time probes the URL until one is delivered; the other messages wait'),
  })
  .describe("The webhook's URL as its recent attempts showed it");

export const deliveryList = z.object({
  deliveries: z.array(delivery),
  endpoint: endpointState,
  nextPageToken,
});
export type DeliveryList = z.infer<typeof deliveryList>;

export const deliveryAttempt = z.object({
  attemptedAt: z.number().int(),
  trigger: z
    .enum(['scheduled', 'manual'])
    .describe("scheduled: the first attempt or one of the retry schedule's (a retry of a pending message brings it forward); manual: a retry or recover of a finished message"),
  statusCode: z.number().int().optional(),
  error: z.string().optional(),
  durationMs: z.number().int(),
  responseBody: z.string().optional().describe("The first 4 KB of the response's body"),
});

/** One message: its log entry, the body exactly as sent and signed, and its attempts (the last 25), oldest first. */
export const deliveryDetail = delivery.extend({
  body: z.string().describe('The body exactly as sent and signed'),
  attemptHistory: z.array(deliveryAttempt).describe('The last 25 attempts, oldest first'),
});
export type DeliveryDetail = z.infer<typeof deliveryDetail>;

export const queuedMessage = z.object({ messageId: z.string() });
export type QueuedMessage = z.infer<typeof queuedMessage>;

/**
 * 10^12 ms is 2001-09-09, before any message; 10^12 s is 33 658 AD. So a `since` from 1 to 10^12 - 1
 * is seconds sent by mistake, which as milliseconds would queue again every failed message.
 */
const SMALLEST_MILLISECONDS = 1e12;

export const recoverBody = z.strictObject({
  since: z
    .number({ error: expected('must be a time in milliseconds since the epoch') })
    .int({ error: 'must be a time in milliseconds since the epoch', abort: true })
    .min(0, { error: 'must be a time in milliseconds since the epoch', abort: true })
    .refine((since) => since === 0 || since >= SMALLEST_MILLISECONDS, {
      error: (issue) => `milliseconds since the epoch expected; ${String(issue.input)} looks like seconds (multiply by 1000), or send 0 for all`,
    })
    .describe('Milliseconds since the Unix epoch (0 for all): failed messages created since then are queued again'),
});
export type RecoverInput = z.infer<typeof recoverBody>;

export const recoverResult = z.object({
  messages: z.number().int().describe('Failed messages queued again'),
});
export type RecoverResult = z.infer<typeof recoverResult>;
