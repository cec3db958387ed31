import type { ComponentChildren } from 'preact';
import { useId, useMemo } from 'preact/hooks';
import { answer, api, type AccountStats, type Chain } from '../api/client';
import { formatAgo, formatCount, formatDuration, formatTime } from '../format';
import { useLoad, type Loaded } from '../hooks';
import { Chart, type ChartSeries } from '../ui/chart';
import { ErrorNotice, Loading, PageHeader, StatusBadge } from '../ui/components';
import { loadChains } from './chains';
import { webhookTitle } from './webhooks';
import { webhookPath } from './webhook/links';

const REFRESH_MS = 15_000;
/** Webhooks are counted a page of 100 at a time, up to this many pages per status; past it the count shows "1,000+". */
const COUNTED_PAGES = 10;
const COUNT_PAGE_SIZE = 100;
const INACTIVE_SHOWN = 10;

type Status = 'active' | 'inactive';

async function countWebhooks(status: Status): Promise<{ count: number; more: boolean }> {
  let count = 0;
  let pageToken: string | undefined;
  for (let page = 0; page < COUNTED_PAGES; page += 1) {
    const list = await answer(api.GET('/v1/webhooks', { params: { query: { status, pageSize: COUNT_PAGE_SIZE, pageToken } } }));
    count += list.webhooks.length;
    if (!list.nextPageToken) return { count, more: false };
    pageToken = list.nextPageToken;
  }
  return { count, more: true };
}

/**
 * The account at a glance. Each block loads on its own and shows as soon as its answer is in, so the
 * page is usable before the slowest call (counting many webhooks) returns.
 */
export function OverviewPage() {
  return (
    <>
      <PageHeader title="Overview" />
      <p class="muted">Refreshes every 15 s.</p>
      <WebhookCounts />
      <Deliveries />
      <InactiveWebhooks />
      <Chains />
    </>
  );
}

function Block({ title, children }: { title: string; children: ComponentChildren }) {
  const id = useId();
  return (
    <section class="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** The loading line or the failure of one block; its content once data is in (kept while a refresh fails). */
function Loads<T>({ loaded, what, children }: { loaded: Loaded<T>; what: string; children: (data: T) => ComponentChildren }) {
  return (
    <>
      <ErrorNotice error={loaded.error} title={`${what} could not be loaded`} />
      {loaded.data === undefined ? !loaded.error && <Loading what={`Loading ${what.toLowerCase()}`} /> : children(loaded.data)}
    </>
  );
}

function WebhookCounts() {
  const active = useLoad(() => countWebhooks('active'), [], { refreshMs: REFRESH_MS });
  const inactive = useLoad(() => countWebhooks('inactive'), [], { refreshMs: REFRESH_MS });
  return (
    <Block title="Webhooks">
      <div class="cards">
        <CountCard status="active" loaded={active} />
        <CountCard status="inactive" loaded={inactive} />
      </div>
    </Block>
  );
}

function CountCard({ status, loaded }: { status: Status; loaded: Loaded<{ count: number; more: boolean }> }) {
  return (
    <div class="stat">
      <a href={`/console/webhooks?status=${status}`}>{status === 'active' ? 'Active' : 'Inactive'}</a>
      <Loads loaded={loaded} what={`${status === 'active' ? 'Active' : 'Inactive'} webhooks`}>
        {({ count, more }) => (
          <p class="figure">
            {formatCount(count)}
            {more && '+'}
          </p>
        )}
      </Loads>
    </div>
  );
}

// As the webhook page's chart colours them: the theme's success, warning and danger, each readable on white.
const SERIES_COLOURS = { succeeded: '#1a7f37', pending: '#8a5300', failed: '#b42318' };

function Deliveries() {
  const stats = useLoad(() => answer(api.GET('/v1/stats', { params: { query: { hours: 24 } } })), [], { refreshMs: REFRESH_MS });
  return (
    <>
      <Block title="Deliveries in the last 24 hours">
        <Loads loaded={stats} what="Delivery statistics">
          {(data) => <DeliveryFigures stats={data} />}
        </Loads>
      </Block>
      <Block title="Failing webhooks">
        <p class="muted">Webhooks with a failed attempt in the last 24 hours, the most recent failure first (at most 25), and how their URL is doing now.</p>
        <Loads loaded={stats} what="Failing webhooks">
          {(data) => <FailingWebhooks failing={data.failingWebhooks} />}
        </Loads>
      </Block>
    </>
  );
}

function DeliveryFigures({ stats }: { stats: AccountStats }) {
  const { totals } = stats;
  const times = useMemo(() => stats.hours.map(({ hour }) => hour), [stats]);
  const series = useMemo<ChartSeries[]>(
    () => [
      { label: 'Succeeded', color: SERIES_COLOURS.succeeded, values: stats.hours.map(({ succeeded }) => succeeded) },
      { label: 'Pending', color: SERIES_COLOURS.pending, values: stats.hours.map(({ pending }) => pending) },
      { label: 'Failed', color: SERIES_COLOURS.failed, values: stats.hours.map(({ failed }) => failed) },
    ],
    [stats],
  );
  return (
    <>
      <dl class="totals">
        <Total label="Attempts">{formatCount(totals.attempts)}</Total>
        <Total label="Succeeded">{formatCount(totals.succeeded)}</Total>
        <Total label="Pending" hint="failed, to be tried again">
          {formatCount(totals.pending)}
        </Total>
        <Total label="Failed" hint="out of retries or refused">
          {formatCount(totals.failed)}
        </Total>
        <Total label="Latency p50 / p99">
          {totals.latencyMs ? `${formatDuration(totals.latencyMs.p50)} / ${formatDuration(totals.latencyMs.p99)}` : '—'}
        </Total>
      </dl>
      <Chart title="Delivery attempts per hour" unit="attempts" times={times} series={series} />
    </>
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

function FailingWebhooks({ failing }: { failing: AccountStats['failingWebhooks'] }) {
  if (failing.length === 0) return <p>No delivery attempt failed in the last 24 hours.</p>;
  return (
    <div class="table-scroll">
      <table class="stacked">
        <caption class="visually-hidden">Failing webhooks</caption>
        <thead>
          <tr>
            <th scope="col">Webhook</th>
            <th scope="col">Status</th>
            <th scope="col" class="number">
              Failed attempts
            </th>
            <th scope="col">Last failure</th>
            <th scope="col">Status code</th>
            <th scope="col">Error</th>
            <th scope="col">URL</th>
            <th scope="col">Failing since</th>
            <th scope="col" class="number">
              Consecutive failures
            </th>
            <th scope="col">Circuit</th>
          </tr>
        </thead>
        <tbody>
          {failing.map(({ webhookId, name, status, failedAttempts, lastFailure, endpoint }) => (
            <tr key={webhookId}>
              <th scope="row" class="break" data-label="Webhook">
                <a href={webhookPath(webhookId)}>{webhookTitle({ id: webhookId, name })}</a>
              </th>
              <td data-label="Status">
                <StatusBadge status={status} />
              </td>
              <td class="number" data-label="Failed attempts">
                {formatCount(failedAttempts)}
              </td>
              <td data-label="Last failure">{formatTime(lastFailure.at)}</td>
              <td data-label="Status code">{lastFailure.statusCode ?? '—'}</td>
              <td class="break" data-label="Error">
                {lastFailure.error}
              </td>
              <td data-label="URL">
                <StatusBadge status={endpoint.status} />
              </td>
              <td data-label="Failing since">{endpoint.status === 'failing' ? formatTime(endpoint.failingSince) : '—'}</td>
              <td class="number" data-label="Consecutive failures">
                {endpoint.consecutiveFailures === undefined ? '—' : formatCount(endpoint.consecutiveFailures)}
              </td>
              <td data-label="Circuit">{endpoint.circuitOpen ? <strong>Open: probing one attempt at a time</strong> : 'Closed'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function InactiveWebhooks() {
  const inactive = useLoad(
    () => answer(api.GET('/v1/webhooks', { params: { query: { status: 'inactive', pageSize: INACTIVE_SHOWN } } })),
    [],
    { refreshMs: REFRESH_MS },
  );
  return (
    <Block title="Inactive webhooks">
      <Loads loaded={inactive} what="Inactive webhooks">
        {({ webhooks, nextPageToken }) =>
          webhooks.length === 0 ? (
            <p>Every webhook is active.</p>
          ) : (
            <>
              <p class="muted">Not notified of activity on their chain; their pending messages wait until they are activated again.</p>
              <ul class="plain-list">
                {webhooks.map((webhook) => (
                  <li key={webhook.id} class="break">
                    <a href={webhookPath(webhook.id)}>{webhookTitle(webhook)}</a> <span class="muted">created {formatTime(webhook.createdAt)}</span>
                  </li>
                ))}
              </ul>
              {nextPageToken && <a href="/console/webhooks?status=inactive">All inactive webhooks</a>}
            </>
          )
        }
      </Loads>
    </Block>
  );
}

function Chains() {
  const chains = useLoad(loadChains, [], { refreshMs: REFRESH_MS });
  return (
    <Block title="Followed chains">
      <Loads loaded={chains} what="Chains">
        {(data) => <ChainTable chains={data} />}
      </Loads>
    </Block>
  );
}

function ChainTable({ chains }: { chains: Chain[] }) {
  if (chains.length === 0) return <p>This service follows no chain.</p>;
  return (
    <div class="table-scroll">
      <table class="stacked">
        <caption class="visually-hidden">Followed chains and how far each is followed</caption>
        <thead>
          <tr>
            <th scope="col">Chain</th>
            <th scope="col">Status</th>
            <th scope="col" class="number">
              Checkpoint block
            </th>
            <th scope="col" class="number">
              Head block
            </th>
            <th scope="col" class="number">
              Lag (blocks)
            </th>
            <th scope="col">Head seen</th>
            <th scope="col" class="number">
              Quarantined blocks
            </th>
          </tr>
        </thead>
        <tbody>
          {chains.map(({ chainId, chainName, status, follower }) => (
            <tr key={chainId}>
              <th scope="row" data-label="Chain">
                {chainName} <span class="muted">({chainId})</span>
              </th>
              <td data-label="Status">
                <StatusBadge status={status} />
              </td>
              <td class="number" data-label="Checkpoint block">
                {blockNumber(follower.checkpointBlock)}
              </td>
              <td class="number" data-label="Head block">
                {blockNumber(follower.headBlock)}
              </td>
              <td class="number" data-label="Lag (blocks)">
                {blockNumber(follower.lag)}
              </td>
              <td data-label="Head seen">{formatAgo(follower.headSeenAt)}</td>
              <td class="number" data-label="Quarantined blocks">
                {formatCount(follower.quarantinedBlocks.count)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const blockNumber = (value: number | undefined) => (value === undefined ? '—' : formatCount(value));
