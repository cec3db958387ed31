/**
 * Which attempts may start now, so that one account's slow or dead receivers cannot hold the whole
 * pool: every attempt takes a slot of its account's pool, of its site's (a registrable domain of one
 * account, site.ts) and of its resolved address's (of one account), and one of its destination's
 * attempts a second (its site's and its address's, whoever sends them); an endpoint whose attempts
 * keep failing is circuit-broken, one probe at a time. The slots, the rates and the endpoint's state
 * are in the table, so that every process (Lambdas on AWS, the local loop) keeps to the same limits.
 */
import { runtimeConfig } from '../config/runtime';
import { logger } from '../logger';
import { CLAIM_MARGIN_MS } from './deliver';
import { MAX_QUEUE_DELAY_SECONDS } from './queue';
import { siteOf } from './site';
import { readShardSlots, releaseSlot, takeFreeSlot, type ShardSlots, type SlotPool } from '../store/attempt-slots';
import { recordEndpointOutcome, releaseProbe, takeProbe, type EndpointHealth, type EndpointRef } from '../store/endpoint-health';
import { takeRateTokens } from '../store/destination-rates';
import { rateShards, slotShards } from '../store/table';
import type { MessageRef } from '../store/messages';

/** Consecutive failed attempts after which only a probe may attempt the endpoint. */
export const CIRCUIT_OPENS_AFTER = 5;

const SECOND = 1000;
const attemptTimeoutMs = () => Math.round(runtimeConfig().delivery.attemptTimeoutSeconds * SECOND);
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
}

/**
 * A destination's rate is counted by its site and, apart, by its resolved address (`site:…`,
 * `address:…`); a URL with an IP address for its host is counted once, by its site. The first is what
 * a queue record's origin alone names.
 */
const destinations = (site: string, address: string) => (site === address ? [`site:${site}`] : [`site:${site}`, `address:${address}`]);

type SlotLimit = 'perAccount' | 'perHost';

/** The pools whose slots an attempt takes; without `address` (not resolved yet), those its origin alone names. */
function slotPools(account: string, site: string, address?: string): Array<{ limit: SlotLimit; pool: SlotPool; capacity: number }> {
  const { perAccount, perHost } = runtimeConfig().delivery.concurrency;
  const pools: Array<{ limit: SlotLimit; pool: SlotPool; capacity: number }> = [
    { limit: 'perAccount', pool: { account }, capacity: perAccount },
    { limit: 'perHost', pool: { account, site }, capacity: perHost },
  ];
  // A URL with an IP address for its host: its site is that address.
  if (address !== undefined && address !== site) pools.push({ limit: 'perHost', pool: { account, address }, capacity: perHost });
  return pools;
}

/** A refusal at `now`: put off as `putOffWait` says for slots (`leaseEnds`: those read), as `rateWait` for the destination's rate. */
function putOffRefusal(limit: SlotLimit | 'perDestination', leaseEnds: number[], now: number, deferrals: number): Extract<Admission, { admitted: false }> {
  const wait = limit === 'perDestination' ? rateWait(now, deferrals) : putOffWait(leaseEnds, now, attemptTimeoutMs(), deferrals);
  return { admitted: false, limit, retryAt: now + Math.round(Math.min(wait, MAX_PUT_OFF_MS)) };
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
      limit: 'perAccount' | 'perHost' | 'perDestination' | 'circuit';
      /** When to bring the message back (ms), without an attempt. */
      retryAt: number;
    };

/** The message asking, its endpoint (its webhook URL's origin), and how many times it was put off already (the queue record carries it). */
export interface AdmissionRequest extends MessageRef {
  origin: string;
  deferrals?: number;
}

const isCircuitOpen = (endpoint: EndpointHealth) => endpoint.consecutiveFailures >= CIRCUIT_OPENS_AFTER;

const jitter = (low: number, high: number) => low + Math.random() * (high - low);
const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

/**
 * How long a consumer process takes a pool it found full for full, without reading it again: a
 * burst's messages, refused together, then cost one read of the pool, not one each. Pools whose
 * slots all hang stay full until the first of them times out.
 */
const FULL_REMEMBERED_MS = 50;
const FULL_POOLS_KEPT = 10_000;
/** Attempts one lease of a destination's rate holds at most: a rate of 1 000 a second costs about 100 writes. */
const MAX_RATE_LEASE = 10;

/**
 * One consumer process's admissions (the dispatcher function's instance, the local delivery loop),
 * passed to each: an account's are made one after the other, so that a burst of its messages reads
 * its pools once per admission rather than all at once, and the pools found full are remembered for
 * FULL_REMEMBERED_MS, the messages asking meanwhile refused without a read. It also holds the
 * attempts it leased of each destination's rate in the second under way.
 */
export class ConsumerAdmissions {
  private readonly fullPools = new Map<string, { until: number; read: ShardSlots }>();
  private readonly accountTurns = new Map<string, Promise<unknown>>();
  private readonly leasedAttempts = new Map<string, { second: number; size: number; left: number; full: boolean }>();

  /** `rateLease`: attempts one lease of a destination's rate holds at most (1 for a single admission). */
  constructor(private readonly rateLease = MAX_RATE_LEASE) {}

  /**
   * One attempt of the destination's `rate` a second, from this process's lease for the second under
   * way or a new lease (one conditional write); false when every partition of the destination's
   * counter is spent for this second. A lease holds one attempt, twice as many as the last when that
   * one was used up (up to `rateLease`): a process sending a destination little wastes none of its
   * rate, one sending it much writes once per several attempts. Attempts leased and not made are not
   * given back: a destination gets its rate or less.
   */
  async takeDestinationAttempt(destination: string, rate: number, now: number): Promise<boolean> {
    const second = Math.floor(now / SECOND);
    const lease = this.leasedAttempts.get(destination);
    if (lease?.second === second) {
      if (lease.left > 0) {
        lease.left -= 1;
        return true;
      }
      if (lease.full) return false;
    }
    if (this.leasedAttempts.size >= FULL_POOLS_KEPT) {
      for (const [key, { second: leased }] of this.leasedAttempts) if (leased < second) this.leasedAttempts.delete(key);
    }
    const shards = rateShards(rate);
    const perShard = Math.floor(rate / shards);
    const size = Math.min(this.rateLease, Math.max(1, Math.floor(perShard / 20)), lease && lease.left === 0 && !lease.full ? lease.size * 2 : 1);
    const first = Math.floor(Math.random() * shards);
    for (const shard of shards === 1 ? [first] : [first, (first + 1 + Math.floor(Math.random() * (shards - 1))) % shards]) {
      if (await takeRateTokens(destination, shard, second, size, perShard)) {
        this.leasedAttempts.set(destination, { second, size, left: size - 1, full: false });
        return true;
      }
    }
    this.leasedAttempts.set(destination, { second, size: 1, left: 0, full: true });
    return false;
  }

  /** Whether this process found the destination's rate spent for the second under way. */
  destinationSpent(destination: string, now: number): boolean {
    const lease = this.leasedAttempts.get(destination);
    return lease?.second === Math.floor(now / SECOND) && lease.left === 0 && lease.full;
  }

  seenFull(pool: SlotPool, now: number): ShardSlots | undefined {
    const full = this.fullPools.get(JSON.stringify(pool));
    return full && full.until > now ? full.read : undefined;
  }

  rememberFull(pool: SlotPool, read: ShardSlots, now: number, hangingUntil?: number): void {
    if (this.fullPools.size >= FULL_POOLS_KEPT) {
      for (const [key, { until }] of this.fullPools) if (until <= now) this.fullPools.delete(key);
      if (this.fullPools.size >= FULL_POOLS_KEPT) this.fullPools.clear();
    }
    this.fullPools.set(JSON.stringify(pool), { until: Math.max(now + FULL_REMEMBERED_MS, hangingUntil ?? 0), read });
  }

  /** Runs `admit` once the account's admissions asked before it in this process have ended. */
  inTurn<T>(account: string, admit: () => Promise<T>): Promise<T> {
    const turn = (this.accountTurns.get(account) ?? Promise.resolve()).then(admit, admit);
    const ended = turn.catch(() => undefined);
    this.accountTurns.set(account, ended);
    void ended.then(() => {
      if (this.accountTurns.get(account) === ended) this.accountTurns.delete(account);
    });
    return turn;
  }
}

/**
 * The refusal of a message whose queue record names its endpoint, when the consumer found its
 * account's or its site's pool full a moment ago: decided before the message is read, so that a
 * burst put off again and again costs no reads of the store.
 */
export function refusedByFullPool(request: AdmissionRequest, admissions: ConsumerAdmissions, now = Date.now()): Extract<Admission, { admitted: false }> | undefined {
  const site = siteOf(request.origin);
  const deferrals = request.deferrals ?? 0;
  for (const { limit, pool } of slotPools(request.account, site)) {
    const full = admissions.seenFull(pool, now);
    if (full) return putOffRefusal(limit, full.leaseEnds, now, deferrals);
  }
  const [siteDestination] = destinations(site, site);
  return admissions.destinationSpent(siteDestination!, now) ? putOffRefusal('perDestination', [], now, deferrals) : undefined;
}

/**
 * Whether the attempt of `request` may start now (`at`, or the time it is asked), given `endpoint` as
 * read with the message; `address` resolves the webhook's host (its address pool's key). Admitted,
 * the caller attempts and then calls `release`. `admissions`: the consumer process's, which orders
 * the account's admissions and refuses at once for a pool it found full a moment ago.
 */
export async function admitAttempt(
  request: AdmissionRequest,
  endpoint: EndpointHealth,
  address: () => Promise<string>,
  at?: number,
  admissions?: ConsumerAdmissions,
): Promise<Admission> {
  const { account, deferrals = 0 } = request;
  // Before any lease is taken: a lease lasts as long as the attempt may, from when it is taken.
  const resolved = await address();
  const timeoutMs = attemptTimeoutMs();
  const now = at ?? Date.now();
  // A probe seen under way refuses without a write: a failing endpoint's backlog, coming back
  // again and again, would otherwise write its one item far past DynamoDB's 1 000 a second.
  if (isCircuitOpen(endpoint) && endpoint.probeUntil !== undefined && endpoint.probeUntil > now) {
    return { admitted: false, limit: 'circuit', retryAt: circuitRetryAt(endpoint, now + timeoutMs + CLAIM_MARGIN_MS, now, deferrals) };
  }
  if (!admissions) return takeSlots(request, endpoint, resolved, now);
  return admissions.inTurn(account, () => takeSlots(request, endpoint, resolved, at ?? Date.now(), admissions));
}

/** The slots (and, the circuit open, the probe) of an admission, taken at `now` unless a pool is full. */
async function takeSlots(request: AdmissionRequest, endpoint: EndpointHealth, resolved: string, now: number, admissions?: ConsumerAdmissions): Promise<Admission> {
  const { account, origin, messageId, deferrals = 0 } = request;
  const ref: EndpointRef = { account, origin };
  const timeoutMs = attemptTimeoutMs();
  const until = now + timeoutMs + CLAIM_MARGIN_MS;
  const site = siteOf(origin);
  const pools = slotPools(account, site, resolved);
  let probe: number | undefined;
  const putOff = async (limit: SlotLimit | 'perDestination', slots: HeldSlot[], full?: ShardSlots): Promise<Admission> => {
    await freeAll(ref, messageId, slots, probe);
    return putOffRefusal(limit, full?.leaseEnds ?? [], now, deferrals);
  };
  const seenFull = pools.find(({ pool }) => admissions?.seenFull(pool, now));
  if (seenFull) return putOff(seenFull.limit, [], admissions!.seenFull(seenFull.pool, now));
  // Every pool is read before anything is written (the probe, a slot): a refusal, what a busy
  // endpoint's backlog mostly gets, then writes nothing. The slots are taken one after the other:
  // takers at once (of other processes) that each won a slot of a different pool would all give them back.
  const read = await Promise.all(pools.map(({ pool, capacity }) => readShards(pool, capacity, now)));
  const full = pools.findIndex((_, index) => read[index]!.free.length === 0);
  if (full >= 0) {
    // Full until its first hanging slot times out only when every partition was read: full partitions of a large pool say little of the others.
    admissions?.rememberFull(pools[full]!.pool, read[full]!, now, read[full]!.wholePool ? hangingUntil(read[full]!.leaseEnds, now, timeoutMs) : undefined);
    return putOff(pools[full]!.limit, [], read[full]);
  }
  if (isCircuitOpen(endpoint)) {
    if (!(await takeProbe(ref, until, now))) return { admitted: false, limit: 'circuit', retryAt: circuitRetryAt(endpoint, until, now, deferrals) };
    probe = until;
  }
  // The destination's rate beside the slots, after the pools were read: a message put off for its
  // slots spends none of it, and one whose slot another process won meanwhile spends one attempt.
  const rates = admissions ?? new ConsumerAdmissions(1);
  const slots: HeldSlot[] = [];
  const takeSlotsInTurn = async () => {
    for (const [index, { limit, pool }] of pools.entries()) {
      const slot = await takeFreeSlot(pool, read[index]!.free, messageId, until, now);
      if (slot === undefined) return limit;
      slots.push({ pool, slot });
    }
    return undefined;
  };
  const [withinRate, lost] = await Promise.all([
    Promise.all(destinations(site, resolved).map((destination) => rates.takeDestinationAttempt(destination, runtimeConfig().delivery.destinationRatePerSecond, now))),
    takeSlotsInTurn(),
  ]);
  if (withinRate.includes(false)) return putOff('perDestination', slots);
  if (lost) return putOff(lost, slots);
  return admitted(ref, endpoint, messageId, slots, probe);
}

/** Partitions an admission reads at most before it is put off: all of a pool of up to 16 slots (a site's, an address's). */
const MOST_SHARDS_READ = 4;

/**
 * The free slots of a partition of the pool, read from a random one on until one has a free slot, at
 * most MOST_SHARDS_READ of them: each read spreads over the pool's partitions. Near a large pool's
 * capacity an attempt may thus be put off while a partition not read has a slot free; the capacity
 * itself is never exceeded. Refused, the leases of every slot read, and whether they were the whole pool's.
 */
async function readShards(pool: SlotPool, capacity: number, now: number): Promise<ShardSlots & { wholePool: boolean }> {
  const shards = slotShards(capacity);
  const first = Math.floor(Math.random() * shards);
  const leaseEnds: number[] = [];
  const reads = Math.min(shards, MOST_SHARDS_READ);
  for (let offset = 0; offset < reads; offset += 1) {
    const read = await readShardSlots(pool, capacity, (first + offset) % shards, now);
    if (read.free.length > 0) return { ...read, wholePool: false };
    leaseEnds.push(...read.leaseEnds);
  }
  return { free: [], leaseEnds, wholePool: reads === shards };
}

/**
 * How long a message refused a slot waits: a quarter of the attempt's timeout, doubled with each
 * refusal (up to 16 times), ±50 %. When every slot it read (`leaseEnds`: the shards it read, all of a
 * small pool) has been held over a quarter of the timeout (attempts hanging, as a dead receiver's
 * do), not before the first of them times out: a hanging receiver's backlog is then read again as
 * its slots free, not every few seconds.
 */
function putOffWait(leaseEnds: number[], now: number, timeoutMs: number, deferrals: number): number {
  const backoff = timeoutMs * PUT_OFF_TIMEOUT_FRACTION * 2 ** Math.min(deferrals, MAX_PUT_OFF_DOUBLINGS) * jitter(0.5, 1.5);
  const hanging = hangingUntil(leaseEnds, now, timeoutMs);
  return hanging === undefined ? backoff : Math.max(backoff, (hanging - now) * jitter(1, 1.5));
}

/**
 * How long a message refused by its destination's rate waits: into the next second, at a random
 * point of the next one, two, four... seconds (by how often it was refused), so that a destination's
 * waiting messages come back spread over the seconds its rate allows.
 */
function rateWait(now: number, deferrals: number): number {
  return Math.min(MAX_PUT_OFF_MS, SECOND - (now % SECOND) + Math.random() * SECOND * 2 ** Math.min(deferrals, MAX_PUT_OFF_DOUBLINGS));
}

/** When the first of a full shard's attempts times out, if every one has run over a quarter of its timeout. */
function hangingUntil(leaseEnds: number[], now: number, timeoutMs: number): number | undefined {
  const leaseMs = timeoutMs + CLAIM_MARGIN_MS;
  const hanging = leaseEnds.length > 0 && leaseEnds.every((end) => now - (end - leaseMs) > timeoutMs * PUT_OFF_TIMEOUT_FRACTION);
  return hanging ? Math.min(...leaseEnds) - CLAIM_MARGIN_MS : undefined;
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
      await Promise.all([
        freeAll(ref, holder, slots, undefined),
        warnOnFailure('endpoint state not recorded', () => recordEndpointOutcome(ref, seen, outcome.delivered, Date.now(), probe)),
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

