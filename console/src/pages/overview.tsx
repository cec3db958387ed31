import type { ComponentChildren } from 'preact';
import { useId, useMemo } from 'preact/hooks';
import { answer, api, type AccountStats } from '../api/client';
import { formatCount, formatInterval } from '../format';
import { useLoad } from '../hooks';
import { paths } from '../paths';
import { Chart } from '../ui/chart';
import { Loads, PageHeader } from '../ui/components';
import { loadChains } from './chains';
import { attemptSeries, Totals } from './delivery-figures';
import { ChainTable, FailingWebhooks, InactiveWebhooks } from './overview-tables';

const REFRESH_MS = 15_000;
const STATS_HOURS = 24;

/**
 * The account at a glance: one call to GET /v1/stats (webhooks by status, the deliveries, the failing
 * and inactive webhooks) and one to GET /v1/chains, each block shown as soon as its answer is in.
 */
export function OverviewPage() {
  const stats = useLoad((signal) => answer(api.GET('/v1/stats', { params: { query: { hours: STATS_HOURS } }, signal })), [], { refreshMs: REFRESH_MS });
  const chains = useLoad(loadChains, [], { refreshMs: REFRESH_MS });
  return (
    <>
      <PageHeader title="Overview" />
      <p class="muted">Refreshes every {formatInterval(REFRESH_MS)}.</p>
      <Block title="Webhooks">
        <Loads loaded={stats} errorTitle="Webhook counts could not be loaded" loadingText="Loading webhook counts">
          {({ webhooks }) => (
            <div class="cards">
              <CountCard label="Active" href={paths.webhooksWithStatus('active')} count={webhooks.active} />
              <CountCard label="Inactive" href={paths.webhooksWithStatus('inactive')} count={webhooks.inactive} />
            </div>
          )}
        </Loads>
      </Block>
      <Block title="Deliveries in the last 24 hours">
        <Loads loaded={stats} errorTitle="Delivery statistics could not be loaded" loadingText="Loading delivery statistics">
          {(data) => <DeliveryFigures stats={data} />}
        </Loads>
      </Block>
      <Block title="Failing webhooks">
        <p class="muted">Webhooks with a failed attempt in the last 24 hours, the most recent failure first (at most 25), and how their URL is doing now.</p>
        <Loads loaded={stats} errorTitle="Failing webhooks could not be loaded" loadingText="Loading failing webhooks">
          {(data) => <FailingWebhooks failing={data.failingWebhooks} />}
        </Loads>
      </Block>
      <Block title="Inactive webhooks">
        <Loads loaded={stats} errorTitle="Inactive webhooks could not be loaded" loadingText="Loading inactive webhooks">
          {(data) => <InactiveWebhooks stats={data} />}
        </Loads>
      </Block>
      <Block title="Followed chains">
        <Loads loaded={chains} errorTitle="Chains could not be loaded" loadingText="Loading chains">
          {(data) => <ChainTable chains={data} />}
        </Loads>
      </Block>
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

function CountCard({ label, href, count }: { label: string; href: string; count: number }) {
  return (
    <div class="stat">
      <a href={href}>{label}</a>
      <p class="figure">{formatCount(count)}</p>
    </div>
  );
}

function DeliveryFigures({ stats }: { stats: AccountStats }) {
  const times = useMemo(() => stats.hours.map(({ hour }) => hour), [stats]);
  const series = useMemo(() => attemptSeries(stats.hours), [stats]);
  return (
    <>
      <Totals totals={stats.totals} />
      <Chart title="Delivery attempts per hour" unit="attempts" times={times} series={series} />
    </>
  );
}
