import { tableName } from './client';
import { conditionHeld } from './conditional-write';
import { getItem, updateItem, type Item } from './items';
import { endpointHealthKey, retentionEndOf } from './table';

/**
 * Which endpoint: an origin (scheme, host and port) of one account's webhook URLs. The account's
 * webhooks at one origin are one receiver, which fails or answers for all of them.
 */
export interface EndpointRef {
  account: string;
  origin: string;
}

/** The origin of a webhook's URL: its endpoint's name. */
export const originOf = (url: string) => new URL(url).origin;

/** What the recent attempts to a webhook's endpoint showed, and whether the circuit's probe is under way. */
export interface EndpointHealth {
  /** Attempts failed since the last delivered one. */
  consecutiveFailures: number;
  /** When the first of those failures was recorded (ms); absent while none. */
  failingSince?: number;
  /** While the circuit's one probe attempt may be under way: when its lease ends (ms). */
  probeUntil?: number;
}

/**
 * The endpoint's health from its item; a healthy one's when there is none. Items written before
 * every attempt took slots also hold `lastAttemptFast` and `slowUntil`, which nothing reads any more.
 */
export function toEndpointHealth(item: Item | undefined): EndpointHealth {
  if (!item) return { consecutiveFailures: 0 };
  return {
    consecutiveFailures: item.consecutiveFailures ?? 0,
    ...(item.failingSince === undefined ? {} : { failingSince: item.failingSince }),
    ...(item.probeUntil === undefined ? {} : { probeUntil: item.probeUntil }),
  };
}

const keyOf = ({ account, origin }: EndpointRef) => endpointHealthKey(account, origin);

export async function getEndpointHealth(ref: EndpointRef): Promise<EndpointHealth> {
  return toEndpointHealth(await getItem({ TableName: tableName(), Key: keyOf(ref) }));
}

/** Takes the circuit's probe lease until `until`, unless another attempt holds it at `now`. */
export async function takeProbe(ref: EndpointRef, until: number, now: number): Promise<boolean> {
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: keyOf(ref),
      UpdateExpression: 'SET probeUntil = :until',
      ConditionExpression: 'attribute_not_exists(probeUntil) OR probeUntil <= :now',
      ExpressionAttributeValues: { ':until': until, ':now': now },
    }),
  );
}

/** Gives up the probe lease taken until `heldUntil`, if it is still that one. */
export async function releaseProbe(ref: EndpointRef, heldUntil: number): Promise<void> {
  await conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: keyOf(ref),
      UpdateExpression: 'REMOVE probeUntil',
      ConditionExpression: 'probeUntil = :held',
      ExpressionAttributeValues: { ':held': heldUntil },
    }),
  );
}

/**
 * Records whether an attempt delivered, writing only when it changes the endpoint's state from `seen`
 * (as read before the attempt): the successes of a healthy endpoint, most attempts, write nothing. A
 * failure always writes, counted atomically (attempts under way at once all count). `probe`: the
 * probe lease this attempt holds (until then), given up here if it is still that one.
 */
export async function recordEndpointOutcome(ref: EndpointRef, seen: EndpointHealth, delivered: boolean, now: number, probe?: number): Promise<void> {
  const update = outcomeUpdate(seen, delivered, now);
  if (update) {
    await conditionHeld(
      updateItem({
        TableName: tableName(),
        Key: keyOf(ref),
        // Kept while it changes: an endpoint no webhook sends to any more goes with DynamoDB's TTL (and, still used, is learnt again).
        UpdateExpression: `SET expiresAt = :expiresAt, ${update.set}`,
        ExpressionAttributeValues: { ...update.values, ':expiresAt': retentionEndOf(now) },
      }),
    );
  }
  if (probe !== undefined) await releaseProbe(ref, probe);
}

/** What the outcome changes: the SET clauses (and what follows them), and their values. */
function outcomeUpdate(seen: EndpointHealth, delivered: boolean, now: number): { set: string; values: Item } | undefined {
  if (!delivered) {
    return {
      set: 'failingSince = if_not_exists(failingSince, :now) ADD consecutiveFailures :one',
      values: { ':now': now, ':one': 1 },
    };
  }
  if (seen.consecutiveFailures === 0 && seen.failingSince === undefined) return undefined;
  return { set: 'consecutiveFailures = :zero REMOVE failingSince', values: { ':zero': 0 } };
}
