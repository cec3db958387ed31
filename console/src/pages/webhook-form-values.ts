import { ApiFailure, type NewWebhook, type Webhook, type WebhookChanges } from '../api/client';
import { splitEntries } from '../entries';

/** What the webhook form holds, as the user typed it. */
export interface Values {
  name: string;
  description: string;
  url: string;
  chainId: string;
  addresses: string;
  includeInternalTxs: boolean;
  includeLogs: boolean;
  eventSignatures: string;
}

export const EMPTY: Values = { name: '', description: '', url: '', chainId: '', addresses: '', includeInternalTxs: false, includeLogs: false, eventSignatures: '' };

export function valuesOf(webhook: Webhook): Values {
  const { name, description, url, chainId, includeInternalTxs, includeLogs } = webhook;
  return { name, description, url, chainId, addresses: '', includeInternalTxs, includeLogs, eventSignatures: webhook.metadata.eventSignatures.join('\n') };
}

export function newWebhook(values: Values): NewWebhook {
  return {
    name: values.name,
    description: values.description,
    url: values.url.trim(),
    chainId: values.chainId,
    eventType: 'address_activity',
    includeInternalTxs: values.includeInternalTxs,
    includeLogs: values.includeLogs,
    metadata: { addresses: [...new Set(splitEntries(values.addresses))], eventSignatures: splitEntries(values.eventSignatures) },
  };
}

/** Only what the form changed, as PATCH takes it; undefined when nothing did. */
export function changedFields(webhook: Webhook, values: Values): WebhookChanges | undefined {
  const changes: WebhookChanges = {};
  if (values.name !== webhook.name) changes.name = values.name;
  if (values.description !== webhook.description) changes.description = values.description;
  if (values.url.trim() !== webhook.url) changes.url = values.url.trim();
  if (values.includeInternalTxs !== webhook.includeInternalTxs) changes.includeInternalTxs = values.includeInternalTxs;
  if (values.includeLogs !== webhook.includeLogs) changes.includeLogs = values.includeLogs;
  const signatures = splitEntries(values.eventSignatures);
  const distinct = new Set(signatures.map((signature) => signature.toLowerCase()));
  const stored = webhook.metadata.eventSignatures;
  if (distinct.size !== stored.length || !stored.every((signature) => distinct.has(signature))) changes.metadata = { eventSignatures: signatures };
  return Object.keys(changes).length ? changes : undefined;
}

/**
 * The API names a bad entry by its index ("metadata.addresses[3]: must be ..."): the message beside the
 * field then says which entry it was, as the user typed it.
 */
export function withEntriesNamed(error: unknown, metadata: { addresses?: string[]; eventSignatures?: string[] } | undefined): unknown {
  if (!(error instanceof ApiFailure) || error.statusCode !== 400) return error;
  const message = error.message.replace(
    /(metadata\.(addresses|eventSignatures)\[(\d+)\]): /g,
    (whole, field: string, list: 'addresses' | 'eventSignatures', index: string, offset: number, text: string) => {
      const entry = metadata?.[list]?.[Number(index)];
      return entry === undefined || text.startsWith(entry, offset + whole.length) ? whole : `${field}: ${entry}: `;
    },
  );
  return new ApiFailure(error.statusCode, message, error.error);
}
