import type { AccountStats, Chain } from '../api/client';
import { formatAgo, formatCount, formatTime, webhookTitle } from '../format';
import { paths } from '../paths';
import { StatusBadge } from '../ui/components';
import { followerHealthy, followerNode, followerStateLabel } from './chains';
import { DeactivationReason } from './deactivation';

export function FailingWebhooks({ failing }: { failing: AccountStats['failingWebhooks'] }) {
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
                <a href={paths.webhook(webhookId)}>{webhookTitle({ id: webhookId, name })}</a>
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

export function InactiveWebhooks({ stats }: { stats: AccountStats }) {
  const { inactiveWebhooks, webhooks } = stats;
  if (inactiveWebhooks.length === 0) return <p>Every webhook is active.</p>;
  return (
    <>
      <p class="muted">Not notified of activity on their chain; their pending messages wait until they are activated again. Newest first, at most 25.</p>
      <ul class="inactive-list">
        {inactiveWebhooks.map(({ webhookId, name, url, deactivation }) => (
          <li key={webhookId} class="break">
            <a href={paths.webhook(webhookId)}>{webhookTitle({ id: webhookId, name })}</a> <span class="mono muted">{url}</span>
            <div>
              <DeactivationReason deactivation={deactivation} />
            </div>
          </li>
        ))}
      </ul>
      {webhooks.inactive > inactiveWebhooks.length && (
        <a href={paths.webhooksWithStatus('inactive')}>All {formatCount(webhooks.inactive)} inactive webhooks</a>
      )}
    </>
  );
}

export function ChainTable({ chains }: { chains: Chain[] }) {
  if (chains.length === 0) return <p>This service follows no chain.</p>;
  return (
    <div class="table-scroll">
      <table class="stacked">
        <caption class="visually-hidden">Followed chains and how far each is followed</caption>
        <thead>
          <tr>
            <th scope="col">Chain</th>
            <th scope="col">Follower</th>
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
            <th scope="col">Node</th>
          </tr>
        </thead>
        <tbody>
          {chains.map(({ chainId, chainName, status, follower }) => (
            <tr key={chainId}>
              <th scope="row" data-label="Chain">
                {chainName} <span class="muted">({chainId})</span>
              </th>
              <td data-label="Follower">
                <FollowerState status={status} follower={follower} />
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
              <td data-label="Node">{followerNode(follower)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * The follower's state, not the hosted API's status alone: a follower stuck on a block still sees the
 * head (status OK) and is shown stalled, since when and why; a stopped one, why.
 */
function FollowerState({ status, follower }: Pick<Chain, 'status' | 'follower'>) {
  const { state, stalledSince, lastError } = follower;
  const healthy = followerHealthy(state);
  return (
    <>
      <span class={`badge badge-${!healthy ? 'failing' : state === 'catchingUp' ? 'pending' : 'healthy'}`}>{followerStateLabel(state)}</span>
      {status === 'UNAVAILABLE' && state !== 'notRunning' && (
        <>
          {' '}
          <StatusBadge status={status} />
        </>
      )}
      {state === 'stalled' && stalledSince !== undefined && (
        <div>
          since {formatTime(stalledSince)} ({formatAgo(stalledSince)})
        </div>
      )}
      {!healthy && lastError && (
        <div class="break">
          {lastError.kind} <span class="muted">(last {formatAgo(lastError.at)})</span>
        </div>
      )}
    </>
  );
}

const blockNumber = (value: number | undefined) => (value === undefined ? '—' : formatCount(value));
