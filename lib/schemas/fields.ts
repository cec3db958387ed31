import * as z from './zod';
import { runtimeConfig } from '../config/runtime';

/**
 * Error text for a field: "is required" when the field is absent, the given description otherwise.
 * The HTTP layer prefixes it with the field's name.
 */
export function expected(description: string) {
  return (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : description);
}

/** Lower-cases and drops repeats, keeping first-seen order. */
function uniqueLowerCase(values: string[]): string[] {
  return [...new Set(values.map((value) => value.toLowerCase()))];
}

export const MAX_ADDRESSES_PER_WEBHOOK = 100;
export const MAX_EVENT_SIGNATURES_PER_WEBHOOK = 100;

export const address = z
  .string({ error: expected('must be a string') })
  .regex(/^0x[0-9a-fA-F]{40}$/, { error: 'must be 0x followed by 40 hexadecimal digits' });

export const eventSignature = z
  .string({ error: expected('must be a string') })
  .regex(/^0x[0-9a-fA-F]{64}$/, { error: 'must be 0x followed by 64 hexadecimal digits' });

export const addresses = z
  .array(address, { error: expected('must be an array of addresses') })
  .min(1, { error: 'must hold at least one address' })
  .max(MAX_ADDRESSES_PER_WEBHOOK, { error: `must hold at most ${MAX_ADDRESSES_PER_WEBHOOK} addresses` })
  .transform(uniqueLowerCase);

export const eventSignatures = z
  .array(eventSignature, { error: expected('must be an array of event signatures') })
  .max(MAX_EVENT_SIGNATURES_PER_WEBHOOK, {
    error: `must hold at most ${MAX_EVENT_SIGNATURES_PER_WEBHOOK} event signatures`,
  })
  .transform(uniqueLowerCase);

export const webhookStatus = z.enum(['active', 'inactive'], { error: expected("must be 'active' or 'inactive'") });
export type WebhookStatus = z.infer<typeof webhookStatus>;

export const eventType = z.literal('address_activity', { error: expected("must be 'address_activity'") });

export const chainId = z
  .string({ error: expected('must be a string') })
  .regex(/^[1-9][0-9]{0,19}$/, { error: 'must be a positive decimal chain id of at most 20 digits, e.g. "43114"' });

export const MAX_NAME_LENGTH = 256;
export const MAX_DESCRIPTION_LENGTH = 1024;
export const MAX_URL_LENGTH = 2048;

export const name = z
  .string({ error: expected('must be a string') })
  .max(MAX_NAME_LENGTH, { error: `must be at most ${MAX_NAME_LENGTH} characters` });

export const description = z
  .string({ error: expected('must be a string') })
  .max(MAX_DESCRIPTION_LENGTH, { error: `must be at most ${MAX_DESCRIPTION_LENGTH} characters` });

export const flag = z.boolean({ error: expected('must be true or false') });

const LOCAL_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A webhook's target. `https://` always; `http://` only to this machine and only where the stage
 * allows it (never in production). Credentials in the URL are refused: they would be stored and
 * shown in every list response.
 */
export const webhookUrl = z
  .string({ error: expected('must be a string') })
  .max(MAX_URL_LENGTH, { error: `must be at most ${MAX_URL_LENGTH} characters` })
  .superRefine((value, ctx) => {
    const allowHttpLocalhost = runtimeConfig().stage.allowHttpLocalhostUrls;
    const allowed = allowHttpLocalhost ? 'an https:// URL (or http://localhost)' : 'an https:// URL';
    const url = URL.canParse(value) ? new URL(value) : undefined;
    const acceptable =
      url !== undefined &&
      url.hostname !== '' &&
      (url.protocol === 'https:' || (allowHttpLocalhost && url.protocol === 'http:' && LOCAL_HOSTNAMES.has(url.hostname)));
    if (!acceptable) ctx.addIssue({ code: 'custom', message: `must be ${allowed}` });
    else if (url.username || url.password) ctx.addIssue({ code: 'custom', message: 'must not contain credentials' });
  });

/** Ids are issued as lower-case UUIDv7; any UUID is accepted for a look-up (and is simply not found). */
export const webhookId = z
  .string({ error: expected('must be a string') })
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, { error: 'must be a webhook id (a UUID)' })
  .transform((id) => id.toLowerCase());
