import * as z from './zod';
import {
  addresses,
  chainId,
  description,
  eventSignatures,
  eventType,
  FIRST_ADDRESSES_SHOWN,
  flag,
  name,
  nextPageToken,
  pageSize,
  pageToken,
  queryFlag,
  webhookId,
  webhookStatus,
  webhookUrl,
} from './fields';

/** A webhook as every response shows it: every field of the spec's table, always present. */
export const webhook = z.object({
  id: z.string().describe('The webhook id (a UUID)'),
  url: z.string().describe('Where notifications are sent, WHATWG-normalized'),
  chainId: z.string().describe('The EVM chain id, in decimal'),
  status: webhookStatus,
  createdAt: z.number().int().describe('Milliseconds since the Unix epoch, as the hosted API shows it (1715621587726)'),
  name: z.string(),
  description: z.string(),
  eventType,
  metadata: z.object({
    eventSignatures: z.array(z.string()).describe('Lower-case; when not empty, only logs with one of these topic0 make a transaction match'),
    addresses: z
      .array(z.string())
      .describe(
        `Lower-case, in address order: all of them up to ${FIRST_ADDRESSES_SHOWN}, else the first ${FIRST_ADDRESSES_SHOWN} (GET /v1/webhooks/{id}/addresses lists all)`,
      ),
  }),
  includeInternalTxs: z.boolean().describe('Whether notifications carry internalTransactions (and internal calls make a transaction match)'),
  includeLogs: z.boolean().describe('Whether notifications carry the logs of the transaction'),
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

const UPDATABLE_FIELDS = 'name, description, url, status, includeInternalTxs, includeLogs, metadata.eventSignatures';

/**
 * The hosted API's UpdateWebhookRequest fields, plus `metadata.eventSignatures`. Addresses are not
 * among them: a set of up to a million is changed through the addresses operations, not replaced here.
 */
const updateWebhookFields = z.strictObject({
  name: name.optional(),
  description: description.optional(),
  url: webhookUrl.optional(),
  status: webhookStatus.optional(),
  includeInternalTxs: flag.optional(),
  includeLogs: flag.optional(),
  metadata: z
    .strictObject(
      {
        eventSignatures: eventSignatures.optional(),
        addresses: z
          .undefined({ error: 'cannot be changed by PATCH: add or remove addresses with PATCH or DELETE /v1/webhooks/{id}/addresses' })
          .optional(),
      },
      { error: 'must be an object with eventSignatures' },
    )
    .optional(),
});
export type UpdateWebhookInput = z.infer<typeof updateWebhookFields>;

export const updateWebhookBody = updateWebhookFields.refine((body) => Object.keys(webhookChanges(body)).length > 0, {
  error: `must set at least one of ${UPDATABLE_FIELDS}`,
});

/**
 * What a PATCH body sets, as stored field paths to values (`metadata.eventSignatures` sets that one
 * metadata field). The body's check for "changes something" and the update itself both read this.
 */
export function webhookChanges({ metadata, ...fields }: UpdateWebhookInput): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(fields)) if (value !== undefined) changes[field] = value;
  if (metadata?.eventSignatures !== undefined) changes['metadata.eventSignatures'] = metadata.eventSignatures;
  return changes;
}

export const webhookPath = z.strictObject({ id: webhookId });

export const deleteWebhookQuery = z.strictObject({ permanent: queryFlag });
export type DeleteWebhookQuery = z.infer<typeof deleteWebhookQuery>;

export const listWebhooksQuery = z.strictObject({ pageToken, pageSize, status: webhookStatus.optional() });
export type ListWebhooksQuery = z.infer<typeof listWebhooksQuery>;

export const webhookList = z.object({
  webhooks: z.array(webhook),
  nextPageToken: nextPageToken,
});
export type WebhookList = z.infer<typeof webhookList>;
