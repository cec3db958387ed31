import { webhookNotFound } from '../errors';
import { MAX_FAILING_WEBHOOKS, MAX_INACTIVE_WEBHOOKS, type AccountStats, type AttemptCounts, type AttemptFailure, type StatsQuery, type WebhookStats } from '../schemas/stats';
import { forEachChunk } from '../store/batch';
import { HOUR_MS, queryAccountHours, queryWebhookFailures, queryWebhookHours, type HourCounts, type WebhookHour } from '../store/delivery-stats';
import { getEndpointHealth, originOf } from '../store/endpoint-health';
import { countAccountWebhooks } from '../store/account-usage';
import { countWebhooksWithStatus, getWebhookWithDeactivation, queryInactiveWebhooks, readWebhookItems } from '../store/webhooks';
import { describeEndpoint, type EndpointState } from './admission';
import { addCounts, emptyCounts, FAILING_WEBHOOKS_KEPT, hourOf, LATENCY_BUCKETS, latencyPercentiles } from './stats';

const PARALLEL_QUERIES = 8;

/** The window of `hours` hours ending with the current one: its first and last hours' starts. */
function windowOf(hours: number, now: number) {
  const last = hourOf(now);
  return { first: last - (hours - 1) * HOUR_MS, last };
}

function attemptCounts({ latency, ...counts }: HourCounts): AttemptCounts {
  const latencyMs = latencyPercentiles(latency);
  return latencyMs ? { ...counts, latencyMs } : counts;
}

/** Every hour of the window, oldest first, with its counts (zeros where none), and the totals. */
function windowStats(first: number, last: number, found: Array<{ hour: number; counts: HourCounts }>) {
  const byHour = new Map(found.map(({ hour, counts }) => [hour, counts]));
  const totals = emptyCounts();
  const hours = [];
  for (let hour = first; hour <= last; hour += HOUR_MS) {
    const counts = byHour.get(hour) ?? emptyCounts();
    addCounts(totals, counts);
    hours.push({ hour, ...attemptCounts(counts) });
  }
  return { from: first, to: last + HOUR_MS, hours, totals: attemptCounts(totals) };
}

/** The last failure of hours in order. */
const lastFailureOf = (hours: WebhookHour[]): AttemptFailure | undefined => [...hours].reverse().find((hour) => hour.lastFailure)?.lastFailure;

/** The state of the endpoint at `origin`, as the delivery log shows it. */
async function endpointAt(account: string, origin: string): Promise<EndpointState> {
  return describeEndpoint(await getEndpointHealth({ account, origin }));
}

/** The webhook's attempts per hour over the last `hours` hours, with its last failure and its endpoint's state. */
export async function getWebhookStats(account: string, id: string, { hours }: StatsQuery, now = Date.now()): Promise<WebhookStats> {
  const read = await getWebhookWithDeactivation(account, id);
  if (!read) throw webhookNotFound(id);
  const { webhook, deactivation } = read;
  const { first, last } = windowOf(hours, now);
  const [found, endpoint] = await Promise.all([queryWebhookHours(account, id, first, last), endpointAt(account, originOf(webhook.url))]);
  const lastFailure = lastFailureOf(found);
  return { webhookId: id, ...windowStats(first, last, found), ...(lastFailure ? { lastFailure } : {}), endpoint, ...(deactivation ? { deactivation } : {}) };
}

/**
 * The account's webhooks by status, and its newest inactive ones with why. The total is the usage
 * item's count (one small read) and only the inactive are counted in gsi1, usually few: not every
 * webhook item read (docs/table-design.md says what that costs and what it may count briefly).
 */
async function webhooksByStatus(account: string): Promise<Pick<AccountStats, 'webhooks' | 'inactiveWebhooks'>> {
  const [total, inactive] = await Promise.all([countAccountWebhooks(account), queryInactiveWebhooks(account, MAX_INACTIVE_WEBHOOKS)]);
  // Without a usage item (no webhook created since usage was kept), the active ones are counted too.
  // Never below zero: gsi1 is eventually consistent, and a moment after a change the reads may disagree.
  const active = total === undefined ? await countWebhooksWithStatus(account, 'active') : Math.max(0, total - inactive.count);
  return {
    webhooks: { active, inactive: inactive.count },
    inactiveWebhooks: inactive.webhooks.map(({ webhook: { id, name, url }, deactivation }) => ({ webhookId: id, name, url, ...(deactivation ? { deactivation } : {}) })),
  };
}

/**
 * The account's attempts per hour over the last `hours` hours, and its webhooks that failed in them,
 * the most recent failure first: those the newest hours name, up to FAILING_WEBHOOKS_KEPT (an hour
 * keeps at least as many), each read (the webhook, its hours, its endpoint); a webhook deleted since
 * is left out. The list is exact unless the newest hours that fill it name more than that. With the
 * account's webhooks by status and its newest inactive ones.
 */
export async function getAccountStats(account: string, { hours }: StatsQuery, now = Date.now()): Promise<AccountStats> {
  const { first, last } = windowOf(hours, now);
  const [found, byStatus] = await Promise.all([queryAccountHours(account, first, last, LATENCY_BUCKETS), webhooksByStatus(account)]);
  const candidates = new Set<string>();
  for (const { failingWebhooks } of [...found].reverse()) {
    // A whole hour at a time: which of an hour's webhooks failed last is known only once read.
    if (candidates.size >= MAX_FAILING_WEBHOOKS) break;
    for (const id of failingWebhooks.sort()) if (candidates.size < FAILING_WEBHOOKS_KEPT) candidates.add(id);
  }
  const { webhooks } = await readWebhookItems([...candidates].map((id) => ({ account, id })));
  const failing: Array<Omit<AccountStats['failingWebhooks'][number], 'endpoint'>> = [];
  await forEachChunk(webhooks, 1, PARALLEL_QUERIES, async ([webhook]) => {
    const { id, name, url, status } = webhook!;
    const hoursOf = await queryWebhookFailures(account, id, first, last);
    const lastFailure = lastFailureOf(hoursOf);
    if (!lastFailure) return;
    const failedAttempts = hoursOf.reduce((sum, { counts }) => sum + counts.pending + counts.failed, 0);
    failing.push({ webhookId: id, name, url, status, failedAttempts, lastFailure });
  });
  const shown = failing.sort((a, b) => b.lastFailure.at - a.lastFailure.at).slice(0, MAX_FAILING_WEBHOOKS);
  // One read per endpoint: the account's webhooks at one origin share its state.
  const origins = [...new Set(shown.map(({ url }) => originOf(url)))];
  const endpoints = new Map(await Promise.all(origins.map(async (origin) => [origin, await endpointAt(account, origin)] as const)));
  return {
    ...windowStats(first, last, found),
    failingWebhooks: shown.map((entry) => ({ ...entry, endpoint: endpoints.get(originOf(entry.url))! })),
    ...byStatus,
  };
}
