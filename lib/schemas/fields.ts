import { checksumAddress, type Address } from 'viem';
import * as z from './zod';
import { runtimeConfig } from '../config/runtime';
import { refusedLiteralTargetReason } from '../deliveries/target-guard';
import { firstHiddenCharacter, type TextShape } from '../text';

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

export const MAX_EVENT_SIGNATURES_PER_WEBHOOK = 100;

/**
 * Whether an address (0x and 40 hex digits) is all lower-case, all upper-case, or mixed-case with a
 * matching EIP-55 checksum. A mixed-case spelling that does not match is almost always a typo.
 */
function checksumHoldsIfMixedCase(value: string): boolean {
  const digits = value.slice(2);
  if (digits === digits.toLowerCase() || digits === digits.toUpperCase()) return true;
  return checksumAddress(value as Address) === value;
}

export const address = z
  .string({ error: expected('must be a string') })
  .regex(/^0x[0-9a-fA-F]{40}$/, { error: 'must be 0x followed by 40 hexadecimal digits', abort: true })
  .refine(checksumHoldsIfMixedCase, {
    error: (issue) => `${String(issue.input)} has a mixed-case EIP-55 checksum that does not match; check it for a typo, or send it all lower-case`,
  });

export const eventSignature = z
  .string({ error: expected('must be a string') })
  .regex(/^0x[0-9a-fA-F]{64}$/, { error: 'must be 0x followed by 64 hexadecimal digits' });

/**
 * Limits count what is stored: the values after lower-casing and dropping repeats, so that the same
 * address in two spellings counts once and a list that normalizes within the limit is accepted.
 */
function distinctValuesAtMost(limit: number, what: string) {
  return z.array(z.string()).max(limit, { error: `must hold at most ${limit} distinct ${what}` });
}

/** 1 to the stage's per-call limit (10 000 by default), as one call may add or remove. */
export const addresses = z
  .array(address, { error: expected('must be an array of addresses') })
  .min(1, { error: 'must hold at least one address' })
  .transform(uniqueLowerCase)
  .check((ctx) => {
    const limit = runtimeConfig().addressLimits.perCall;
    if (ctx.value.length > limit) ctx.issues.push({ code: 'custom', input: ctx.value, message: `must hold at most ${limit} distinct addresses` });
  });

export const eventSignatures = z
  .array(eventSignature, { error: expected('must be an array of event signatures') })
  .transform(uniqueLowerCase)
  .pipe(distinctValuesAtMost(MAX_EVENT_SIGNATURES_PER_WEBHOOK, 'event signatures'));

export const webhookStatus = z.enum(['active', 'inactive'], { error: expected("must be 'active' or 'inactive'") });
export type WebhookStatus = z.infer<typeof webhookStatus>;

export const eventType = z.literal('address_activity', { error: expected("must be 'address_activity'") });

export const chainId = z
  .string({ error: expected('must be a string') })
  .regex(/^[1-9][0-9]{0,19}$/, { error: 'must be a positive decimal chain id of at most 20 digits, e.g. "43114"' })
  .meta({ description: 'The EVM chain id, in decimal', examples: ['43114'] });

export const MAX_NAME_LENGTH = 256;
export const MAX_DESCRIPTION_LENGTH = 1024;
export const MAX_URL_LENGTH = 2048;

/**
 * What a name or description must not hold, named after the first such character: text that hides or
 * reorders what a person reads ("npm start\u200b" would read as the key `npm start`).
 */
function withoutHiddenCharacters(shape: TextShape) {
  return (ctx: z.core.ParsePayload<string>) => {
    const hidden = firstHiddenCharacter(ctx.value, shape);
    if (!hidden) return;
    const character = `U+${hidden.codePoint.toString(16).toUpperCase().padStart(4, '0')} at position ${hidden.position}`;
    ctx.issues.push({ code: 'custom', input: ctx.value, message: `must not contain ${hiddenKind(hidden.codePoint, shape)} (${character})` });
  };
}

function hiddenKind(codePoint: number, shape: TextShape): string {
  const character = String.fromCodePoint(codePoint);
  if (/\p{Cc}/u.test(character)) return shape === 'line' ? 'control characters' : 'control characters other than line breaks and tabs';
  if (/\p{Cs}/u.test(character)) return 'unpaired surrogates';
  if (/[\p{Zl}\p{Zp}]/u.test(character)) return 'line or paragraph separators';
  return 'invisible or direction-changing characters';
}

const CHARACTERS_REFUSED = 'no control characters, invisible or direction-changing characters (Unicode format characters, e.g. U+200B, U+202E), line or paragraph separators, or unpaired surrogates; emoji keep their joiners (docs/api.md)';

export const NAME_RULE = `At most ${MAX_NAME_LENGTH} characters; ${CHARACTERS_REFUSED}`;

export const name = z
  .string({ error: expected('must be a string') })
  .max(MAX_NAME_LENGTH, { error: `must be at most ${MAX_NAME_LENGTH} characters` })
  .check(withoutHiddenCharacters('line'))
  .describe(NAME_RULE);

export const description = z
  .string({ error: expected('must be a string') })
  .max(MAX_DESCRIPTION_LENGTH, { error: `must be at most ${MAX_DESCRIPTION_LENGTH} characters` })
  .check(withoutHiddenCharacters('description'))
  .describe(`At most ${MAX_DESCRIPTION_LENGTH} characters; line breaks and tabs allowed, otherwise ${CHARACTERS_REFUSED}`);

export const flag = z.boolean({ error: expected('must be true or false') });

/** A query parameter `true` or `false`, false when absent. */
export const queryFlag = z
  .enum(['true', 'false'], { error: "must be 'true' or 'false'" })
  .transform((value) => value === 'true')
  .default(false);

const LOCAL_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * WHATWG URL parsing forgives what a caller should be told about: it trims surrounding whitespace,
 * drops tabs and newlines anywhere, and reads `https:///path` or `https:\\path` as the host `path`.
 * So the text as sent must have no whitespace or control character and a host right after `//`.
 */
const WHITESPACE_OR_CONTROL = /[\s\p{Cc}]/u;
const SCHEME_AND_HOST = /^[a-z][a-z0-9+.-]*:\/\/[^/\\?#]/i;

/**
 * A webhook's target, stored and shown in its WHATWG-normalized form (`new URL(url).href`).
 * `https://` always; `http://` only to this machine and only where the stage allows it (never in
 * production). Credentials in the URL are refused: they would be stored and shown in every list
 * response.
 */
export const webhookUrl = z
  .string({ error: expected('must be a string') })
  .max(MAX_URL_LENGTH, { error: `must be at most ${MAX_URL_LENGTH} characters` })
  .meta({
    description:
      "https:// (and http://localhost on the local stage), without credentials; an IP literal host must be a public address (outside production, also a loopback port other than the service's own, as must localhost); stored WHATWG-normalized",
    examples: ['https://example.com/webhooks'],
  })
  .transform((value, ctx) => {
    const allowHttpLocalhost = runtimeConfig().stage.allowHttpLocalhostUrls;
    const allowed = `an absolute https:// URL${allowHttpLocalhost ? ' (or http:// to localhost, 127.0.0.1 or [::1])' : ''}, e.g. https://example.com/webhooks`;
    // Text that is not a URL at all ("not a url") is told what a URL must be, not about its spaces.
    if (WHITESPACE_OR_CONTROL.test(value) && SCHEME_AND_HOST.test(value.trim())) {
      ctx.addIssue({ code: 'custom', message: 'must not contain whitespace or control characters' });
      return z.NEVER;
    }
    const url = SCHEME_AND_HOST.test(value) && URL.canParse(value) ? new URL(value) : undefined;
    const acceptable =
      url !== undefined &&
      url.hostname !== '' &&
      (url.protocol === 'https:' || (allowHttpLocalhost && url.protocol === 'http:' && LOCAL_HOSTNAMES.has(url.hostname)));
    if (!acceptable) ctx.addIssue({ code: 'custom', message: `must be ${allowed}` });
    else if (url.username || url.password) ctx.addIssue({ code: 'custom', message: 'must not contain credentials' });
    else if (url.href.length > MAX_URL_LENGTH) {
      ctx.addIssue({ code: 'custom', message: `must be at most ${MAX_URL_LENGTH} characters once normalized` });
    } else {
      // An IP literal or localhost that can never be a target is refused now; a name is vetted when it is resolved.
      const { loopbackTargets } = runtimeConfig();
      const refused = refusedLiteralTargetReason(url, loopbackTargets);
      if (!refused) return url.href;
      ctx.addIssue({ code: 'custom', message: `must point at a public address${loopbackTargets ? ' or an allowed loopback port' : ''}, not ${refused}` });
    }
    return z.NEVER;
  });

/** A webhook object shows at most this many of its addresses: the first in address order. */
export const FIRST_ADDRESSES_SHOWN = 100;

export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 100;

const pageSizeMessage = `must be an integer from 1 to ${MAX_PAGE_SIZE}`;

export const pageSize = z
  .string()
  .regex(/^[0-9]{1,3}$/, { error: pageSizeMessage })
  .transform(Number)
  .pipe(z.number().int().min(1, { error: pageSizeMessage }).max(MAX_PAGE_SIZE, { error: pageSizeMessage }))
  .default(DEFAULT_PAGE_SIZE)
  .meta({ type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, description: 'Items per page' });

export const nextPageToken = z.string().optional().describe('Pass it as pageToken for the next page; absent on the last page');

/** Any string: the page-token decoder refuses whatever this server did not issue, with one message for all. */
export const pageToken = z.string().optional().describe("The previous page's nextPageToken");

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Ids are issued as lower-case UUIDv7; any UUID is accepted for a look-up (and is simply not found). */
export const webhookId = z
  .string({ error: expected('must be a string') })
  .regex(UUID, { error: 'must be a webhook id (a UUID)' })
  .transform((id) => id.toLowerCase());

/** A notification's id, a UUID as webhook ids are. */
export const messageId = z
  .string({ error: expected('must be a string') })
  .regex(UUID, { error: 'must be a message id (a UUID)' })
  .transform((id) => id.toLowerCase());
