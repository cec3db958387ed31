import * as z from './zod';
import { expected, messageId, pageSize, pageToken, webhookId } from './fields';

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
  /** Attempts made, manual ones included. */
  attempts: z.number().int(),
  /** When pending: when the next attempt is due. */
  nextAttemptAt: z.number().int().optional(),
  /** When pending and the webhook is inactive: the message is sent once the webhook is activated. */
  waitingForActivation: z.boolean().optional(),
  /** When an attempt is under way (a retry asked for now is a 409). */
  attemptUnderWay: z.boolean().optional(),
  lastAttemptAt: z.number().int().optional(),
  /** The last attempt's response status, when a response came. */
  lastResponseStatusCode: z.number().int().optional(),
  lastDurationMs: z.number().int().optional(),
  /** Why the last attempt failed: the status, a timeout, a refused connection, a refused target. */
  lastError: z.string().optional(),
});
export type Delivery = z.infer<typeof delivery>;

export const deliveryList = z.object({
  deliveries: z.array(delivery),
  /** Absent on the last page. */
  nextPageToken: z.string().optional(),
});
export type DeliveryList = z.infer<typeof deliveryList>;

export const deliveryAttempt = z.object({
  attemptedAt: z.number().int(),
  /** `scheduled`: the first attempt or one of the retry schedule's; `manual`: a retry or recover asked for it. */
  trigger: z.enum(['scheduled', 'manual']),
  statusCode: z.number().int().optional(),
  error: z.string().optional(),
  durationMs: z.number().int(),
  /** The first 4 KB of the response's body. */
  responseBody: z.string().optional(),
});

/** One message: its log entry, the body exactly as sent and signed, and its attempts (the last 25), oldest first. */
export const deliveryDetail = delivery.extend({ body: z.string(), attemptHistory: z.array(deliveryAttempt) });
export type DeliveryDetail = z.infer<typeof deliveryDetail>;

export const queuedMessage = z.object({ messageId: z.string() });
export type QueuedMessage = z.infer<typeof queuedMessage>;

export const recoverBody = z.strictObject({
  since: z
    .number({ error: expected('must be a time in milliseconds since the epoch') })
    .int({ error: 'must be a time in milliseconds since the epoch' })
    .min(0, { error: 'must be a time in milliseconds since the epoch' }),
});
export type RecoverInput = z.infer<typeof recoverBody>;

export const recoverResult = z.object({
  /** Failed messages queued again. */
  messages: z.number().int(),
});
export type RecoverResult = z.infer<typeof recoverResult>;
