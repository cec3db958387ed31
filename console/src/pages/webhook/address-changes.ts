import { ADDRESSES_PER_CALL, answer, api, ApiFailure } from '../../api/client';
import { ADDRESS_PATTERN, splitEntries } from '../../entries';

/** How often one call is tried again when the API asks to wait (another change of the addresses under way). */
const TRIES_PER_CALL = 5;
const SKIPPED_EXAMPLES = 5;

export interface ParsedAddresses {
  /** Lower-case, each once, in the order first seen. */
  addresses: string[];
  /** Entries that are not 0x and 40 hex digits: a CSV header, a typo. */
  skipped: number;
  skippedExamples: string[];
}

/** Addresses from pasted text or a text/CSV file, split as splitEntries splits a list. */
export function parseAddresses(text: string): ParsedAddresses {
  const addresses = new Set<string>();
  const skippedExamples: string[] = [];
  let skipped = 0;
  for (const entry of splitEntries(text)) {
    if (ADDRESS_PATTERN.test(entry)) addresses.add(entry.toLowerCase());
    else {
      skipped += 1;
      if (skippedExamples.length < SKIPPED_EXAMPLES) skippedExamples.push(entry.length > 60 ? `${entry.slice(0, 60)}…` : entry);
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
  /** Checked between calls and after a wait: true stops the change there (the user cancelled, or left the page). */
  cancelled: () => boolean;
}

/**
 * Adds (PATCH) or removes (DELETE) the addresses in calls of ADDRESSES_PER_CALL, one after another.
 * A stage may be configured with a lower limit: a call refused with the 400 naming it ("must hold at
 * most N distinct addresses") is sent again, and the rest follows, in calls of N.
 * Answers how many were sent (fewer when cancelled); a refusal throws AddressChangeStopped.
 */
export async function changeAddresses(webhookId: string, change: AddressChange, addresses: string[], hooks: ChangeHooks): Promise<number> {
  let sent = 0;
  let perCall = ADDRESSES_PER_CALL;
  while (sent < addresses.length) {
    if (hooks.cancelled()) return sent;
    const batch = addresses.slice(sent, sent + perCall);
    try {
      if (!(await sendWithRetries(webhookId, change, batch, hooks))) return sent;
    } catch (failure) {
      const limit = perCallLimitOf(failure);
      if (limit !== undefined && limit < batch.length) {
        perCall = limit;
        continue;
      }
      throw new AddressChangeStopped(sent, failure);
    }
    sent += batch.length;
    hooks.onSent(sent);
  }
  return sent;
}

/** The stage's per-call limit, from the 400 the API answers a call over it with; undefined for any other failure. */
function perCallLimitOf(failure: unknown): number | undefined {
  if (!(failure instanceof ApiFailure) || failure.statusCode !== 400) return undefined;
  const limit = Number(/must hold at most (\d+) distinct addresses/.exec(failure.message)?.[1]);
  return Number.isSafeInteger(limit) && limit > 0 ? limit : undefined;
}

/** Sends one call, waiting as the API asks while another change is under way; false when cancelled during a wait. */
async function sendWithRetries(webhookId: string, change: AddressChange, addresses: string[], hooks: ChangeHooks): Promise<boolean> {
  for (let tried = 1; ; tried += 1) {
    try {
      await send(webhookId, change, addresses);
      return true;
    } catch (failure) {
      const waitable = failure instanceof ApiFailure && (failure.statusCode === 503 || failure.statusCode === 429) && failure.retryAfterSeconds !== undefined;
      if (!waitable || tried >= TRIES_PER_CALL) throw failure;
      const seconds = Math.min(Math.max(failure.retryAfterSeconds ?? 1, 1), 60);
      hooks.onWaiting(seconds);
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      if (hooks.cancelled()) return false;
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
