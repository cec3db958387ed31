import { useEffect, useId, useMemo, useState } from 'preact/hooks';
import { answer, api, ApiFailure, type DeliveryAttempt, type DeliveryDetail } from '../../api/client';
import { formatCount, formatDuration, formatTime, prettyJson } from '../../format';
import { useAction, useLoad } from '../../hooks';
import { CopyButton, ErrorNotice, Loading, PageHeader, StatusBadge } from '../../ui/components';
import { webhookTitle } from '../webhooks';
import { webhookPath } from './links';

const REFRESH_MS = 3000;
/** A retried message is read again after this long, when its attempt has likely been made. */
const RELOAD_AFTER_RETRY_MS = 1000;
/** A response body longer than this is folded away in a <details>. */
const LONG_RESPONSE_CHARACTERS = 300;

/** What "Retry now" does, by whether the message was still pending (openapi.json's retryDelivery). */
const RETRY_EFFECT = {
  pending: 'Retry now brings the next scheduled attempt forward to now; the message stays on its retry schedule.',
  finished: 'Retry now sends the message once more, as one manual attempt whose outcome becomes its status.',
};
const RETRIED = {
  pending: 'Retry asked for: the next scheduled attempt was brought forward to now, and the message stays on its retry schedule.',
  finished: 'Retry asked for: one manual attempt is made, and its outcome becomes the message\'s status.',
};

/** `/console/webhooks/<id>/deliveries/<messageId>`: one message, its body as sent and its attempts. */
export function DeliveryPage({ id, messageId }: { id: string; messageId: string }) {
  // Attempts the message had when a retry was asked for: refreshing goes on until one more shows.
  const [attemptsAtRetry, setAttemptsAtRetry] = useState<number>();
  const [retried, setRetried] = useState<keyof typeof RETRIED>();
  const retryHintId = useId();
  const webhook = useLoad(() => answer(api.GET('/v1/webhooks/{id}', { params: { path: { id } } })), [id]);
  const [refreshing, setRefreshing] = useState(false);
  const delivery = useLoad(
    () => answer(api.GET('/v1/webhooks/{id}/deliveries/{messageId}', { params: { path: { id, messageId } } })),
    [id, messageId],
    { refreshMs: refreshing ? REFRESH_MS : undefined },
  );
  const data = delivery.data;
  useEffect(() => {
    if (!data) return;
    const waitingForRetry = attemptsAtRetry !== undefined && data.attempts <= attemptsAtRetry;
    setRefreshing(data.status === 'pending' || Boolean(data.attemptUnderWay) || waitingForRetry);
    if (!waitingForRetry) setAttemptsAtRetry(undefined);
  }, [data, attemptsAtRetry]);

  const retry = useAction(async () => {
    setRetried(undefined);
    const retriedWhile = data?.status === 'pending' ? 'pending' : 'finished';
    await answer(api.POST('/v1/webhooks/{id}/deliveries/{messageId}/retry', { params: { path: { id, messageId } } }));
    setRetried(retriedWhile);
    setAttemptsAtRetry(data?.attempts ?? 0);
    setTimeout(() => void delivery.reload(), RELOAD_AFTER_RETRY_MS);
  });

  return (
    <>
      <nav aria-label="Breadcrumb" class="breadcrumb">
        <a href="/console/webhooks">Webhooks</a> › <a href={webhookPath(id)}>{webhook.data ? webhookTitle(webhook.data) : 'Webhook'}</a> ›{' '}
        <a href={webhookPath(id, 'deliveries')}>Deliveries</a>
      </nav>
      <PageHeader title={`Delivery ${messageId}`}>
        <div class="retry-action">
          <button type="button" class="primary" onClick={() => void retry.run()} disabled={retry.busy || !data} aria-describedby={data ? retryHintId : undefined}>
            {retry.busy ? 'Retrying…' : 'Retry now'}
          </button>
          {data && (
            <p class="hint" id={retryHintId}>
              {RETRY_EFFECT[data.status === 'pending' ? 'pending' : 'finished']}
            </p>
          )}
        </div>
      </PageHeader>
      <p role="status">{retried && `${RETRIED[retried]} ${refreshing ? 'This page refreshes until the attempt shows.' : 'The attempt is below.'}`}</p>
      <ErrorNotice title={retry.error instanceof ApiFailure && retry.error.statusCode === 409 ? 'Not retried now' : 'Not retried'} error={retry.error} />
      <ErrorNotice title="Could not load the delivery" error={delivery.error} />
      {data ? <DeliveryView webhookId={id} delivery={data} refreshing={refreshing} /> : !delivery.error && <Loading what="Loading the delivery" />}
    </>
  );
}

function DeliveryView({ webhookId, delivery, refreshing }: { webhookId: string; delivery: DeliveryDetail; refreshing: boolean }) {
  const body = useMemo(() => prettyJson(delivery.body), [delivery.body]);
  return (
    <>
      <dl class="properties card">
        <dt>Status</dt>
        <dd>
          <StatusBadge status={delivery.status} />
          {delivery.attemptUnderWay && ' An attempt is under way.'}
          {delivery.waitingForActivation && ' Waits for the webhook to be activated.'}
          {refreshing && <span class="muted"> Refreshes every 3 s.</span>}
        </dd>
        <dt>Created</dt>
        <dd>{formatTime(delivery.createdAt)}</dd>
        <dt>Attempts</dt>
        <dd>{formatCount(delivery.attempts)}</dd>
        <dt>Next attempt</dt>
        <dd>{delivery.status === 'pending' ? formatTime(delivery.nextAttemptAt) : delivery.status === 'succeeded' ? 'None: delivered' : 'None: failed (Retry now sends it once more)'}</dd>
        <dt>Event type</dt>
        <dd class="mono">{delivery.eventType}</dd>
        {delivery.backfillId && (
          <>
            <dt>Recorded by</dt>
            <dd>
              <a href={webhookPath(webhookId, 'backfills')}>backfill {delivery.backfillId}</a>
            </dd>
          </>
        )}
      </dl>
      <div class="section-header">
        <h2 id="body-heading">Body as sent</h2>
        <CopyButton text={delivery.body} label="Copy body" />
      </div>
      <pre class="payload" tabIndex={0} aria-labelledby="body-heading">
        {body}
      </pre>
      <h2>Attempts</h2>
      {delivery.attemptHistory.length === 0 ? (
        <p>No attempt yet.</p>
      ) : (
        <AttemptTable attempts={delivery.attemptHistory} total={delivery.attempts} />
      )}
      <p>
        <a href={webhookPath(webhookId, 'deliveries')}>Back to the deliveries</a>
      </p>
    </>
  );
}

function AttemptTable({ attempts, total }: { attempts: DeliveryAttempt[]; total: number }) {
  return (
    <>
      {total > attempts.length && <p class="muted">The last {attempts.length} of {formatCount(total)} attempts, oldest first.</p>}
      <div class="table-scroll">
        <table class="stacked">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Trigger</th>
              <th scope="col" class="number">
                Status code
              </th>
              <th scope="col" class="number">
                Duration
              </th>
              <th scope="col">Error</th>
              <th scope="col">Response body</th>
            </tr>
          </thead>
          <tbody>
            {attempts.map((attempt, index) => (
              <tr key={`${attempt.attemptedAt}-${index}`}>
                <th scope="row" data-label="Time">
                  {formatTime(attempt.attemptedAt)}
                </th>
                <td data-label="Trigger">{attempt.trigger}</td>
                <td class="number" data-label="Status code">
                  {attempt.statusCode ?? '—'}
                </td>
                <td class="number" data-label="Duration">
                  {formatDuration(attempt.durationMs)}
                </td>
                <td class="break" data-label="Error">
                  {attempt.error ?? '—'}
                </td>
                <td class="response-body" data-label="Response body">
                  <ResponseBody text={attempt.responseBody} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** The receiver's answer, as text: it is whatever the receiver sent. */
function ResponseBody({ text }: { text: string | undefined }) {
  if (!text) return <span class="muted">—</span>;
  if (text.length <= LONG_RESPONSE_CHARACTERS && text.split('\n').length <= 6) return <pre class="wrap">{text}</pre>;
  return (
    <details>
      <summary>{formatCount(text.length)} characters</summary>
      <pre class="wrap">{text}</pre>
    </details>
  );
}
