/**
 * Which attempts may start now, so that one account's slow or dead receivers cannot hold the whole
 * pool: an endpoint known to answer fast goes at once; any other takes a slot of its account's pool
 * and of its host's (one resolved address of one account); one whose attempts keep failing is
 * circuit-broken, one probe at a time. The slots and the endpoint's state are in the table, so that
 * every process (Lambdas on AWS, the local loop) keeps to the same limits.
 */
import { runtimeConfig } from '../config/runtime';
import { logger } from '../logger';
import { CLAIM_MARGIN_MS } from './deliver';
import { MAX_QUEUE_DELAY_SECONDS } from './queue';
import { freeSlots, releaseSlot, takeFreeSlot, type SlotPool } from '../store/attempt-slots';
import { recordEndpointOutcome, releaseProbe, takeProbe, type EndpointHealth, type EndpointRef } from '../store/endpoint-health';
import type { MessageRef } from '../store/messages';

/**
 * An attempt delivered within a quarter of its timeout is fast: the endpoint's next attempts take no
 * slot. A receiver under load answers in a second or two and stays fast; one that comes near the
 * timeout holds its place in the pool almost as long as one that never answers.
 */
export const slowAttemptMs = () => runtimeConfig().delivery.attemptTimeoutSeconds * 250;
/**
 * How long a failed or slow attempt keeps its endpoint out of the fast path, whatever follows: a
 * receiver answering one request fast and hanging the next cannot win the no-slot path back each time.
 */
export const SLOW_REMEMBERED_MS = 10 * 60_000;
/** Consecutive failed attempts after which only a probe may attempt the endpoint. */
export const CIRCUIT_OPENS_AFTER = 5;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
/** The longest a message is put off: the queue's longest delay (a longer one would be left to the sweep). */
const MAX_PUT_OFF_MS = MAX_QUEUE_DELAY_SECONDS * SECOND;
/**
 * A message refused a slot first comes back after a quarter of the attempt's timeout (most attempts
 * end well within it, freeing their slots), then after twice that, and so on up to 16 times: a slow
 * but live receiver's backlog goes on soon after its slots free, and a dead one's is read again
 * less and less often, never more than a minute apart.
 */
const PUT_OFF_TIMEOUT_FRACTION = 0.25;
const MAX_PUT_OFF_DOUBLINGS = 4;

/** What an attempt came to, for its endpoint's state. */
export interface AttemptResult {
  delivered: boolean;
  durationMs: number;
}

export type Admission =
  | {
      admitted: true;
      /** The attempt is the circuit's probe. */
      probe: boolean;
      /**
       * Frees what the admission holds and records the outcome in the endpoint's state; without an
       * outcome (no attempt was made: another held the message) it only frees. Never throws: a
       * lease that could not be given up ends by itself.
       */
      release(outcome?: AttemptResult): Promise<void>;
    }
  | {
      admitted: false;
      limit: 'perAccount' | 'perHost' | 'circuit';
      /** When to bring the message back (ms), without an attempt. */
      retryAt: number;
    };

/** The message asking, its endpoint (its webhook URL's origin), and how many times it was put off already (the queue record carries it). */
export interface AdmissionRequest extends MessageRef {
  origin: string;
  deferrals?: number;
}

const isCircuitOpen = (endpoint: EndpointHealth) => endpoint.consecutiveFailures >= CIRCUIT_OPENS_AFTER;
const isKnownFast = (endpoint: EndpointHealth, now: number) =>
  endpoint.known && endpoint.lastAttemptFast && endpoint.consecutiveFailures === 0 && (endpoint.slowUntil ?? 0) <= now;

const jitter = (low: number, high: number) => low + Math.random() * (high - low);
const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

/**
 * Whether the attempt of `request` may start now (`at`, or the time it is asked), given `endpoint` as
 * read with the message; `address` resolves the webhook's host (its host slot's key), asked only when
 * a slot is needed. Admitted, the caller attempts and then calls `release`.
 */
export async function admitAttempt(request: AdmissionRequest, endpoint: EndpointHealth, address: () => Promise<string>, at?: number): Promise<Admission> {
  const { account, origin, messageId, deferrals = 0 } = request;
  const ref: EndpointRef = { account, origin };
  if (!isCircuitOpen(endpoint) && isKnownFast(endpoint, at ?? Date.now())) return admitted(ref, endpoint, messageId, [], undefined);
  // Before any lease is taken: a lease lasts as long as the attempt may, from when it is taken.
  const host = await address();
  const settings = runtimeConfig().delivery;
  const timeoutMs = Math.round(settings.attemptTimeoutSeconds * SECOND);
  const now = at ?? Date.now();
  const until = now + timeoutMs + CLAIM_MARGIN_MS;
  // A probe seen under way refuses without a write: a failing endpoint's backlog, coming back
  // again and again, would otherwise write its one item far past DynamoDB's 1 000 a second.
  const circuitOpen = isCircuitOpen(endpoint);
  const refusedByCircuit = { admitted: false, limit: 'circuit', retryAt: circuitRetryAt(endpoint, until, now, deferrals) } as const;
  if (circuitOpen && endpoint.probeUntil !== undefined && endpoint.probeUntil > now) return refusedByCircuit;
  const pools = [
    { limit: 'perAccount', pool: { account }, capacity: settings.concurrency.perAccount },
    { limit: 'perHost', pool: { account, host }, capacity: settings.concurrency.perHost },
  ] as const;
  let probe: number | undefined;
  const putOff = async (limit: (typeof pools)[number]['limit'], slots: HeldSlot[]): Promise<Admission> => {
    await freeAll(ref, messageId, slots, probe);
    const wait = timeoutMs * PUT_OFF_TIMEOUT_FRACTION * 2 ** Math.min(deferrals, MAX_PUT_OFF_DOUBLINGS) * jitter(0.5, 1.5);
    return { admitted: false, limit, retryAt: now + Math.round(Math.min(wait, MAX_PUT_OFF_MS)) };
  };
  // Both pools are read before anything is written (the probe, a slot): a refusal, what a busy
  // endpoint's backlog mostly gets, then writes nothing. They are taken one after the other: takers
  // at once that each won a slot of a different pool would all give them back.
  const free = await Promise.all(pools.map(({ pool, capacity }) => freeSlots(pool, capacity, now)));
  const full = pools.find((_, index) => free[index]!.length === 0);
  if (full) return putOff(full.limit, []);
  if (circuitOpen) {
    if (!(await takeProbe(ref, until, now))) return refusedByCircuit;
    probe = until;
  }
  const slots: HeldSlot[] = [];
  for (const [index, { limit, pool }] of pools.entries()) {
    const slot = await takeFreeSlot(pool, free[index]!, messageId, until, now);
    if (slot === undefined) return putOff(limit, slots);
    slots.push({ pool, slot });
  }
  return admitted(ref, endpoint, messageId, slots, probe);
}

interface HeldSlot {
  pool: SlotPool;
  slot: number;
}

/**
 * Refused by the open circuit: after the probe's lease, later the longer the endpoint has failed,
 * and twice as late each time the message is refused again, so that a dead endpoint's backlog comes
 * back less and less often. A probe taken since `endpoint` was read holds at most until `leaseEnd`,
 * the lease one taken now would have.
 */
function circuitRetryAt(endpoint: EndpointHealth, leaseEnd: number, now: number, deferrals: number): number {
  const probeUntil = endpoint.probeUntil !== undefined && endpoint.probeUntil > now ? endpoint.probeUntil : leaseEnd;
  const failingFor = now - (endpoint.failingSince ?? now);
  const backoff = 2 ** Math.min(deferrals, MAX_PUT_OFF_DOUBLINGS);
  const wait = Math.max(probeUntil - now, clamp(failingFor / 4, 10 * SECOND, 15 * MINUTE) * backoff * jitter(0.8, 1.2));
  return now + Math.round(Math.min(wait, MAX_PUT_OFF_MS));
}

function admitted(ref: EndpointRef, seen: EndpointHealth, holder: string, slots: HeldSlot[], probe: number | undefined): Admission {
  let released = false;
  return {
    admitted: true,
    probe: probe !== undefined,
    async release(outcome) {
      if (released) return;
      released = true;
      if (!outcome) return freeAll(ref, holder, slots, probe);
      const now = Date.now();
      const recorded = { delivered: outcome.delivered, fast: outcome.delivered && outcome.durationMs <= slowAttemptMs(), slowUntil: now + SLOW_REMEMBERED_MS };
      await Promise.all([
        freeAll(ref, holder, slots, undefined),
        warnOnFailure('endpoint state not recorded', () => recordEndpointOutcome(ref, seen, recorded, now, probe)),
      ]);
    },
  };
}

async function freeAll(ref: EndpointRef, holder: string, slots: HeldSlot[], probe: number | undefined): Promise<void> {
  await Promise.all([
    ...slots.map(({ pool, slot }) => warnOnFailure('attempt slot not released; its lease ends by itself', () => releaseSlot(pool, slot, holder))),
    probe === undefined ? undefined : warnOnFailure('probe not released; its lease ends by itself', () => releaseProbe(ref, probe)),
  ]);
}

async function warnOnFailure(message: string, write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (error) {
    logger.warn(message, { errorName: (error as Error).name });
  }
}

/** The endpoint's state as the delivery log shows it. */
export type EndpointState =
  | { status: 'healthy' }
  | { status: 'failing'; failingSince: number; consecutiveFailures: number; circuitOpen: boolean };

export function describeEndpoint(health: EndpointHealth): EndpointState {
  if (health.consecutiveFailures === 0) return { status: 'healthy' };
  return {
    status: 'failing',
    failingSince: health.failingSince ?? 0,
    consecutiveFailures: health.consecutiveFailures,
    circuitOpen: isCircuitOpen(health),
  };
}

