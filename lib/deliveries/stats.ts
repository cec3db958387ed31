import type { Logger } from '@aws-lambda-powertools/logger';
import { runtimeConfig } from '../config/runtime';
import { logger } from '../logger';
import { forEachChunk } from '../store/batch';
import type { AttemptFailure } from '../schemas/stats';
import { addAccountHourCounts, addWebhookHourCounts, HOUR_MS, type HourCounts } from '../store/delivery-stats';
import type { Attempt } from '../store/messages';

/**
 * The latency histogram's buckets: each holds the attempts that took at most its bound (ms), and
 * more than the one before; the last holds those over 10 s: the attempt's timeout (10 s unless
 * DELIVERY_TIMEOUT_SECONDS says otherwise) as measured, a little over it. Stored by their names: a
 * bound changed would need a new name.
 */
export const LATENCY_BOUNDS_MS = [10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 7500, 10_000] as const;
const OVER_LAST_BOUND = 'inf';
export const LATENCY_BUCKETS = [...LATENCY_BOUNDS_MS.map(String), OVER_LAST_BOUND];

export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

export function latencyBucketOf(durationMs: number): string {
  const bound = LATENCY_BOUNDS_MS.find((candidate) => durationMs <= candidate);
  return bound === undefined ? OVER_LAST_BOUND : String(bound);
}

/** What an attempt left its message: delivered, to be tried again, or failed for good. */
export type AttemptOutcome = 'succeeded' | 'pending' | 'failed';

export const emptyCounts = (): HourCounts => ({ attempts: 0, succeeded: 0, pending: 0, failed: 0, latency: {} });

/** Adds `more` into `into`. */
export function addCounts(into: HourCounts, more: HourCounts): HourCounts {
  into.attempts += more.attempts;
  into.succeeded += more.succeeded;
  into.pending += more.pending;
  into.failed += more.failed;
  for (const [bucket, count] of Object.entries(more.latency)) into.latency[bucket] = (into.latency[bucket] ?? 0) + count;
  return into;
}

/**
 * The p50, p90 and p99 of a histogram: each the bound of the bucket the percentile falls in; of the
 * last bucket, the attempt's timeout. Undefined when it holds no attempt.
 */
export function latencyPercentiles(latency: Record<string, number>): { p50: number; p90: number; p99: number } | undefined {
  const counts = LATENCY_BUCKETS.map((bucket) => latency[bucket] ?? 0);
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (total === 0) return undefined;
  const lastBound = LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
  const timeoutMs = Math.round(runtimeConfig().delivery.attemptTimeoutSeconds * 1000);
  const at = (fraction: number) => {
    const rank = Math.ceil(fraction * total);
    let seen = 0;
    for (const [index, count] of counts.entries()) {
      seen += count;
      if (seen >= rank) return LATENCY_BOUNDS_MS[index] ?? Math.max(timeoutMs, lastBound);
    }
    return Math.max(timeoutMs, lastBound);
  };
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99) };
}

/** An attempt as counted: whose, what it left its message, and the attempt as its message's history records it. */
export interface CountedAttempt {
  account: string;
  webhookId: string;
  outcome: AttemptOutcome;
  attempt: Attempt;
}

interface Entry {
  account: string;
  /** Absent: the account's entry, all its webhooks together. */
  webhookId?: string;
  hour: number;
  /** When its first count was made (ms): it is written once this is FLUSH_AFTER_MS old. */
  since: number;
  counts: HourCounts;
  /** The webhook's latest failure of the hour. */
  lastFailure?: AttemptFailure;
  /** The account's webhooks that failed in the hour, FAILING_WEBHOOKS_KEPT at most: no more are written. */
  failing?: Set<string>;
}

/**
 * The failing webhooks an (account, hour) keeps at least (all of them when fewer failed): as many as
 * the account's statistics read (lib/deliveries/stats-report.ts).
 */
export const FAILING_WEBHOOKS_KEPT = 50;
/** How long an entry waits in a busy dispatcher before it is written: what a dispatcher retired by Lambda can lose. */
export const FLUSH_AFTER_MS = 10_000;
/** Entries kept at most while writes fail; past it the oldest are dropped (and logged). */
const MAX_BUFFERED_ENTRIES = 10_000;
/** Writes under way at once in a flush. */
const FLUSH_PARALLEL = 8;

const entryKey = (account: string, webhookId: string | undefined, hour: number) => `${account}\n${webhookId ?? ''}\n${hour}`;

/**
 * Delivery statistics as attempts end, counted in the process and written a (webhook, hour) and an
 * (account, hour) at a time: one UpdateItem each per flush, however many attempts it holds. The
 * consumer flushes after each batch (docs/delivery.md, "Statistics", says when and what can be lost).
 */
export class DeliveryStatsBuffer {
  private readonly entries = new Map<string, Entry>();
  /** The (account, hour)s whose set of failing webhooks was found full, by entry key, with their hour: written without them until the hour ends. */
  private readonly fullFailingSets = new Map<string, number>();

  constructor(private readonly maxEntries = MAX_BUFFERED_ENTRIES) {}

  /** Entries waiting to be written. */
  get size(): number {
    return this.entries.size;
  }

  /** Counts an attempt in the hour it was made; `now`: when it is counted. */
  count({ account, webhookId, outcome, attempt }: CountedAttempt, now = Date.now(), log: Logger = logger): void {
    const hour = hourOf(attempt.attemptedAt);
    const counts: HourCounts = { ...emptyCounts(), attempts: 1, [outcome]: 1, latency: { [latencyBucketOf(attempt.durationMs)]: 1 } };
    const failure = outcome === 'succeeded' ? undefined : failureOf(attempt);
    this.add({ account, webhookId, hour, since: now, counts, lastFailure: failure }, log);
    this.add({ account, hour, since: now, counts: { ...counts, latency: { ...counts.latency } }, failing: failure && new Set([webhookId]) }, log);
  }

  /**
   * Writes the entries whose hour has ended or that are FLUSH_AFTER_MS old at `now`; with `all`,
   * every entry. Never throws: an entry whose write fails is kept for the next flush.
   */
  async flush(now: number, { all = false, log = logger }: { all?: boolean; log?: Logger } = {}): Promise<void> {
    const due = [...this.entries.entries()].filter(([, entry]) => all || entry.since + FLUSH_AFTER_MS <= now || entry.hour + HOUR_MS <= now);
    for (const [key] of due) this.entries.delete(key);
    for (const [key, hour] of this.fullFailingSets) if (hour + HOUR_MS <= now) this.fullFailingSets.delete(key);
    let failures = 0;
    let lastError: unknown;
    await forEachChunk(due.map(([, entry]) => entry), 1, FLUSH_PARALLEL, async ([entry]) => {
      try {
        await this.write(entry!);
      } catch (error) {
        failures += 1;
        lastError = error;
        this.add(entry!, log);
      }
    });
    if (failures > 0) log.warn('delivery statistics not written; kept for the next flush', { entries: failures, error: (lastError as Error).message });
  }

  private async write(entry: Entry): Promise<void> {
    const { account, webhookId, hour, counts } = entry;
    if (webhookId !== undefined) return addWebhookHourCounts({ account, webhookId, hour }, counts, entry.lastFailure);
    const key = entryKey(account, undefined, hour);
    const webhookIds = this.fullFailingSets.has(key) ? [] : [...(entry.failing ?? [])];
    const { failingSetFull } = await addAccountHourCounts({ account, hour }, counts, { webhookIds, keep: FAILING_WEBHOOKS_KEPT });
    if (failingSetFull) this.fullFailingSets.set(key, hour);
  }

  private add(entry: Entry, log: Logger): void {
    const key = entryKey(entry.account, entry.webhookId, entry.hour);
    const held = this.entries.get(key);
    if (!held) {
      this.entries.set(key, entry);
      this.dropOldest(log);
      return;
    }
    held.since = Math.min(held.since, entry.since);
    addCounts(held.counts, entry.counts);
    if (entry.lastFailure && (!held.lastFailure || entry.lastFailure.at >= held.lastFailure.at)) held.lastFailure = entry.lastFailure;
    if (entry.failing) {
      held.failing ??= new Set();
      for (const id of entry.failing) if (held.failing.size < FAILING_WEBHOOKS_KEPT) held.failing.add(id);
    }
  }

  /** Past the bound, drops the oldest tenth of it at once: not a sort for every new entry while writes keep failing. */
  private dropOldest(log: Logger): void {
    if (this.entries.size <= this.maxEntries) return;
    const keep = Math.floor(this.maxEntries * 0.9);
    const oldest = [...this.entries.entries()].sort(([, a], [, b]) => a.since - b.since).slice(0, this.entries.size - keep);
    for (const [key] of oldest) this.entries.delete(key);
    const attempts = oldest.reduce((sum, [, entry]) => sum + (entry.webhookId === undefined ? 0 : entry.counts.attempts), 0);
    log.warn('delivery statistics dropped: too many kept while writes failed', { entries: oldest.length, attempts });
  }
}

function failureOf(attempt: Attempt): AttemptFailure {
  return {
    at: attempt.attemptedAt,
    error: attempt.error ?? (attempt.statusCode === undefined ? 'failed' : `HTTP ${attempt.statusCode}`),
    ...(attempt.statusCode === undefined ? {} : { statusCode: attempt.statusCode }),
  };
}

/** The process's buffer: the dispatcher's (one per Lambda environment) and the local delivery loop's. */
export const deliveryStats = new DeliveryStatsBuffer();

/** What DynamoDB's TTL does on AWS, for the embedded store: the local delivery loop runs it with the messages' expiry. */
export { deleteExpiredStats } from '../store/delivery-stats';
