import { ADDRESSES_PER_CALL, answer, api, ApiFailure } from '../../api/client';
/** How often one call is tried again when the API asks to wait (another change of the addresses under way). */
const TRIES_PER_CALL = 5;
const SKIPPED_EXAMPLES = 5;

export interface ParsedAddresses {
  /** Lower-case, each once, in the order first seen. */
  addresses: string[];
  /** Tokens that are not 0x and 40 hex digits: a CSV header, a typo. */
  skipped: number;
  skippedExamples: string[];
}

/** Addresses from pasted text or a text/CSV file: split on commas, semicolons and white space (line ends included). */
export function parseAddresses(text: string): ParsedAddresses {
  const addresses = new Set<string>();
  const skippedExamples: string[] = [];
  let skipped = 0;
  for (const raw of text.split(/[\s,;]+/)) {
    // A CSV cell may be quoted.
    const token = raw.replace(/^["']|["']$/g, '');
    if (!token) continue;
    if (/^0x[0-9a-fA-F]{40}$/.test(token)) addresses.add(token.toLowerCase());
    else {
      skipped += 1;
      if (skippedExamples.length < SKIPPED_EXAMPLES) skippedExamples.push(token.length > 60 ? `${token.slice(0, 60)}…` : token);
    }
  }
  return { addresses: [...addresses], skipped, skippedExamples };
}

export type AddressChange = 'add' | 'remove';

/** A change that stopped part way: `sent` addresses were added or removed before `reason`. */
export class AddressChangeStopped extends Error {
  constructor(
    readonly sent: number,
    readonly reason: unknown,
  ) {
    super(reason instanceof Error ? reason.message : String(reason));
    this.name = 'AddressChangeStopped';
  }
}

interface ChangeHooks {
  /** Addresses sent so far, after each call that answered. */
  onSent: (sent: number) => void;
  /** The API asked to wait this many seconds before the call is tried again. */
  onWaiting: (seconds: number) => void;
  /** Checked between calls: true stops the change there. */
  cancelled: () => boolean;
}

/**
 * Adds (PATCH) or removes (DELETE) the addresses in calls of ADDRESSES_PER_CALL, one after another.
 * Answers how many were sent (fewer when cancelled); a refusal throws AddressChangeStopped.
 */
export async function changeAddresses(webhookId: string, change: AddressChange, addresses: string[], hooks: ChangeHooks): Promise<number> {
  let sent = 0;
  while (sent < addresses.length) {
    if (hooks.cancelled()) return sent;
    const batch = addresses.slice(sent, sent + ADDRESSES_PER_CALL);
    try {
      await sendWithRetries(webhookId, change, batch, hooks);
    } catch (failure) {
      throw new AddressChangeStopped(sent, failure);
    }
    sent += batch.length;
    hooks.onSent(sent);
  }
  return sent;
}

async function sendWithRetries(webhookId: string, change: AddressChange, addresses: string[], hooks: ChangeHooks): Promise<void> {
  for (let tried = 1; ; tried += 1) {
    try {
      await send(webhookId, change, addresses);
      return;
    } catch (failure) {
      const waitable = failure instanceof ApiFailure && (failure.statusCode === 503 || failure.statusCode === 429) && failure.retryAfterSeconds !== undefined;
      if (!waitable || tried >= TRIES_PER_CALL) throw failure;
      const seconds = Math.min(Math.max(failure.retryAfterSeconds ?? 1, 1), 60);
      hooks.onWaiting(seconds);
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    }
  }
}

/**
 * How many addresses the webhook watches (the listing's totalAddresses, exact once a change has
 * answered), or undefined when it cannot be read: a change is then reported by what was sent.
 */
export async function countAddresses(webhookId: string): Promise<number | undefined> {
  try {
    const page = await answer(api.GET('/v1/webhooks/{id}/addresses', { params: { path: { id: webhookId }, query: { pageSize: 1 } } }));
    return page.totalAddresses;
  } catch {
    return undefined;
  }
}

/**
 * Of the addresses sent, how many the change added or removed: the difference of the webhook's totals
 * before and after (kept within 0 and `sent`, as another change at the same time can move them).
 */
export function addressesChanged(change: AddressChange, sent: number, before: number | undefined, after: number | undefined): number | undefined {
  if (before === undefined || after === undefined) return undefined;
  const difference = change === 'add' ? after - before : before - after;
  return Math.min(Math.max(difference, 0), sent);
}

function send(webhookId: string, change: AddressChange, addresses: string[]) {
  const request = { params: { path: { id: webhookId } }, body: { addresses } };
  return change === 'add' ? answer(api.PATCH('/v1/webhooks/{id}/addresses', request)) : answer(api.DELETE('/v1/webhooks/{id}/addresses', request));
}
