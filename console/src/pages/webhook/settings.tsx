import { useMemo } from 'preact/hooks';
import { answer, api, type Webhook, type WebhookStats } from '../../api/client';
import { formatTime, shownDescription } from '../../format';
import { useLoad, type Loaded } from '../../hooks';
import { Chart } from '../../ui/chart';
import { Loads } from '../../ui/components';
import { chainLabel, loadChains } from '../chains';
import { DeactivationReason } from '../deactivation';
import { attemptSeries, latencySeries, Totals } from '../delivery-figures';
import { EndpointStateLine } from './endpoint-state';

const STATS_HOURS = 168;
const STATS_REFRESH_MS = 60_000;

/** The webhook's properties (why it is inactive, when it is), and its delivery attempts and their latency over the last 7 days. */
export function SettingsTab({ webhook }: { webhook: Webhook }) {
  const chains = useLoad(loadChains, []);
  // Loaded again when the status changes: the statistics carry the deactivation.
  const stats = useLoad(
    (signal) => answer(api.GET('/v1/webhooks/{id}/stats', { params: { path: { id: webhook.id }, query: { hours: STATS_HOURS } }, signal })),
    [webhook.id, webhook.status],
    { refreshMs: STATS_REFRESH_MS },
  );
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
          {webhook.status === 'inactive' && (
            <>
              <dt>Inactive</dt>
              <dd>{stats.data ? <DeactivationReason deactivation={stats.data.deactivation} /> : '—'}</dd>
            </>
          )}
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
          <dd>{shownDescription(webhook.description) || <span class="muted">None</span>}</dd>
        </dl>
      </section>
      <DeliveryStats stats={stats} />
    </>
  );
}

function DeliveryStats({ stats }: { stats: Loaded<WebhookStats> }) {
  return (
    <section class="card" aria-labelledby="webhook-stats">
      <h2 id="webhook-stats">Deliveries over the last 7 days</h2>
      <Loads loaded={stats} errorTitle="Could not load the statistics" loadingText="Loading the statistics">
        {(data) => <StatsFigures stats={data} />}
      </Loads>
    </section>
  );
}

function StatsFigures({ stats }: { stats: WebhookStats }) {
  const { lastFailure } = stats;
  const charts = useMemo(() => ({ times: stats.hours.map(({ hour }) => hour), attempts: attemptSeries(stats.hours), latency: latencySeries(stats.hours) }), [stats]);
  return (
    <>
      <EndpointStateLine endpoint={stats.endpoint} />
      <Totals totals={stats.totals} />
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
