import { useMemo } from 'preact/hooks';
import { answer, api, type Webhook, type WebhookStats } from '../../api/client';
import { formatCount, formatDuration, formatTime } from '../../format';
import { useLoad } from '../../hooks';
import { Chart, type ChartSeries } from '../../ui/chart';
import { ErrorNotice, Loading } from '../../ui/components';
import { chainLabel, loadChains } from '../chains';
import { EndpointStateLine } from './endpoint-state';

const STATS_HOURS = 168;

/** The webhook's properties, and its delivery attempts and their latency over the last 7 days. */
export function SettingsTab({ webhook }: { webhook: Webhook }) {
  const chains = useLoad(loadChains, []);
  const { eventSignatures } = webhook.metadata;
  return (
    <>
      <section class="card" aria-labelledby="webhook-properties">
        <h2 id="webhook-properties">Properties</h2>
        <dl class="properties">
          <dt>Id</dt>
          <dd class="mono">{webhook.id}</dd>
          <dt>URL</dt>
          <dd class="mono">{webhook.url}</dd>
          <dt>Chain</dt>
          <dd>{chainLabel(chains.data, webhook.chainId)}</dd>
          <dt>Event type</dt>
          <dd class="mono">{webhook.eventType}</dd>
          <dt>Created</dt>
          <dd>{formatTime(webhook.createdAt)}</dd>
          <dt>Include internal transactions</dt>
          <dd>{webhook.includeInternalTxs ? 'Yes' : 'No'}</dd>
          <dt>Include logs</dt>
          <dd>{webhook.includeLogs ? 'Yes' : 'No'}</dd>
          <dt>Event signatures</dt>
          <dd>
            {eventSignatures.length === 0 ? (
              'Any: every log of a watched address'
            ) : (
              <ul class="plain-list mono">
                {eventSignatures.map((signature) => (
                  <li key={signature}>{signature}</li>
                ))}
              </ul>
            )}
          </dd>
          <dt>Description</dt>
          <dd>{webhook.description || <span class="muted">None</span>}</dd>
        </dl>
      </section>
      <DeliveryStats webhookId={webhook.id} />
    </>
  );
}

function DeliveryStats({ webhookId }: { webhookId: string }) {
  const stats = useLoad(
    () => answer(api.GET('/v1/webhooks/{id}/stats', { params: { path: { id: webhookId }, query: { hours: STATS_HOURS } } })),
    [webhookId],
    { refreshMs: 60_000 },
  );
  return (
    <section class="card" aria-labelledby="webhook-stats">
      <h2 id="webhook-stats">Deliveries over the last 7 days</h2>
      <ErrorNotice title="Could not load the statistics" error={stats.error} />
      {stats.data ? <StatsFigures stats={stats.data} /> : !stats.error && <Loading what="Loading the statistics" />}
    </section>
  );
}

function StatsFigures({ stats }: { stats: WebhookStats }) {
  const { totals, lastFailure } = stats;
  const charts = useMemo(() => {
    const times = stats.hours.map(({ hour }) => hour);
    const attempts: ChartSeries[] = [
      { label: 'Succeeded', color: '#1a7f37', values: stats.hours.map(({ succeeded }) => succeeded) },
      { label: 'Pending', color: '#8a5300', values: stats.hours.map(({ pending }) => pending) },
      { label: 'Failed', color: '#b42318', values: stats.hours.map(({ failed }) => failed) },
    ];
    const latency: ChartSeries[] = (['p50', 'p90', 'p99'] as const).map((percentile, index) => ({
      label: percentile,
      color: ['#0b5cad', '#6639ba', '#b42318'][index]!,
      values: stats.hours.map(({ latencyMs }) => latencyMs?.[percentile] ?? null),
    }));
    return { times, attempts, latency };
  }, [stats]);
  return (
    <>
      <EndpointStateLine endpoint={stats.endpoint} />
      <dl class="totals">
        <div>
          <dt>Attempts</dt>
          <dd>{formatCount(totals.attempts)}</dd>
        </div>
        <div>
          <dt>Succeeded</dt>
          <dd>{formatCount(totals.succeeded)}</dd>
        </div>
        <div>
          <dt>Pending</dt>
          <dd>{formatCount(totals.pending)}</dd>
        </div>
        <div>
          <dt>Failed</dt>
          <dd>{formatCount(totals.failed)}</dd>
        </div>
        <div>
          <dt>Latency p50 / p90 / p99</dt>
          <dd>{totals.latencyMs ? `${formatDuration(totals.latencyMs.p50)} / ${formatDuration(totals.latencyMs.p90)} / ${formatDuration(totals.latencyMs.p99)}` : '—'}</dd>
        </div>
      </dl>
      <p>
        <strong>Last failure:</strong>{' '}
        {lastFailure ? (
          <>
            {formatTime(lastFailure.at)}
            {lastFailure.statusCode !== undefined && `, status ${lastFailure.statusCode}`}: <span class="break">{lastFailure.error}</span>
          </>
        ) : (
          'none in these 7 days'
        )}
      </p>
      <Chart title="Delivery attempts per hour" unit="attempts" times={charts.times} series={charts.attempts} />
      <Chart title="Latency per hour" unit="ms" times={charts.times} series={charts.latency} />
    </>
  );
}
