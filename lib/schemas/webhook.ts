import * as z from './zod';
import {
  addresses,
  chainId,
  description,
  eventSignatures,
  eventType,
  flag,
  name,
  webhookId,
  webhookStatus,
  webhookUrl,
} from './fields';

/** A webhook as every response shows it: every field of the spec's table, always present. */
export const webhook = z.object({
  id: z.string(),
  url: z.string(),
  chainId: z.string(),
  status: webhookStatus,
  /** Unix seconds. */
  createdAt: z.number().int(),
  name: z.string(),
  description: z.string(),
  eventType,
  metadata: z.object({ eventSignatures: z.array(z.string()), addresses: z.array(z.string()) }),
  includeInternalTxs: z.boolean(),
  includeLogs: z.boolean(),
});
export type Webhook = z.infer<typeof webhook>;

export const createWebhookBody = z.strictObject({
  url: webhookUrl,
  chainId,
  eventType,
  metadata: z.strictObject(
    { addresses, eventSignatures: eventSignatures.default([]) },
    { error: (issue) => (issue.input === undefined ? 'is required' : 'must be an object with addresses and eventSignatures') },
  ),
  name: name.default(''),
  description: description.default(''),
  includeInternalTxs: flag.default(false),
  includeLogs: flag.default(false),
});
export type CreateWebhookInput = z.infer<typeof createWebhookBody>;

export const updateWebhookBody = z
  .strictObject({
    name: name.optional(),
    description: description.optional(),
    url: webhookUrl.optional(),
    status: webhookStatus.optional(),
    includeInternalTxs: flag.optional(),
    includeLogs: flag.optional(),
    metadata: z
      .strictObject(
        { addresses: addresses.optional(), eventSignatures: eventSignatures.optional() },
        { error: 'must be an object with addresses and/or eventSignatures' },
      )
      .optional(),
  })
  .refine((body) => Object.values(body).some((value) => value !== undefined), {
    error: 'must set at least one of name, description, url, status, includeInternalTxs, includeLogs, metadata',
  });
export type UpdateWebhookInput = z.infer<typeof updateWebhookBody>;

export const webhookPath = z.strictObject({ id: webhookId });

export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 100;

const pageSizeMessage = `must be an integer from 1 to ${MAX_PAGE_SIZE}`;

export const listWebhooksQuery = z.strictObject({
  // Any string: decodePageToken refuses whatever this server did not issue, with one message for all.
  pageToken: z.string().optional(),
  pageSize: z
    .string()
    .regex(/^[0-9]{1,3}$/, { error: pageSizeMessage })
    .transform(Number)
    .pipe(z.number().int().min(1, { error: pageSizeMessage }).max(MAX_PAGE_SIZE, { error: pageSizeMessage }))
    .default(DEFAULT_PAGE_SIZE),
  status: webhookStatus.optional(),
});
export type ListWebhooksQuery = z.infer<typeof listWebhooksQuery>;

export const webhookList = z.object({
  webhooks: z.array(webhook),
  /** Absent on the last page. */
  nextPageToken: z.string().optional(),
});
export type WebhookList = z.infer<typeof webhookList>;
