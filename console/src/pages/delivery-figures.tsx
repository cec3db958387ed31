import type { ComponentChildren } from 'preact';
import type { StatsHour } from '../api/client';
import { formatCount, formatDuration } from '../format';
import type { ChartSeries } from '../ui/chart';

/** What a statistics window's attempts came to: the overview's (the account) and a webhook's settings. */
export function Totals({ totals }: { totals: Omit<StatsHour, 'hour'> }) {
  const latency = totals.latencyMs;
  return (
    <dl class="totals">
      <Total label="Attempts">{formatCount(totals.attempts)}</Total>
      <Total label="Succeeded">{formatCount(totals.succeeded)}</Total>
      <Total label="Pending" hint="failed, to be tried again">
        {formatCount(totals.pending)}
      </Total>
      <Total label="Failed" hint="out of retries or refused">
        {formatCount(totals.failed)}
      </Total>
      <Total label="Latency p50 / p90 / p99">{latency ? `${formatDuration(latency.p50)} / ${formatDuration(latency.p90)} / ${formatDuration(latency.p99)}` : '—'}</Total>
    </dl>
  );
}

function Total({ label, hint, children }: { label: string; hint?: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>
        {label}
        {hint && <span class="total-hint"> ({hint})</span>}
      </dt>
      <dd>{children}</dd>
    </div>
  );
}

/** The attempts of each hour by outcome, as both delivery charts draw them. */
export function attemptSeries(hours: StatsHour[]): ChartSeries[] {
  return [
    { label: 'Succeeded', colour: 'success', values: hours.map(({ succeeded }) => succeeded) },
    { label: 'Pending', colour: 'warning', values: hours.map(({ pending }) => pending) },
    { label: 'Failed', colour: 'danger', values: hours.map(({ failed }) => failed) },
  ];
}

/** Each hour's latency percentiles; an hour without attempts has none. */
export function latencySeries(hours: StatsHour[]): ChartSeries[] {
  const colours = { p50: 'accent', p90: 'violet', p99: 'danger' } as const;
  return (['p50', 'p90', 'p99'] as const).map((percentile) => ({
    label: percentile,
    colour: colours[percentile],
    values: hours.map(({ latencyMs }) => latencyMs?.[percentile] ?? null),
  }));
}
