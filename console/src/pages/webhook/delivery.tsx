import { useEffect, useId, useMemo, useState } from 'preact/hooks';
import { answer, api, ApiFailure, type DeliveryAttempt, type DeliveryDetail } from '../../api/client';
import { formatCount, formatDuration, formatInterval, formatTime, prettyJson, webhookTitle } from '../../format';
import { useAction, useLoad } from '../../hooks';
import { CopyButton, ErrorNotice, Loads, PageHeader, StatusBadge } from '../../ui/components';
import { paths } from '../../paths';
import { TEST_NOTIFICATION_BLOCK } from './deliveries';

/** How often the page is read again while an attempt is under way or due soon, or while a retry's attempt is awaited. */
const REFRESH_MS = 3000;
/** A next attempt due within this long is watched for every REFRESH_MS; a later one gets one reload when it is due. */
const POLL_WHEN_DUE_WITHIN_MS = 60_000;
/** A retried message is read again after this long, when its attempt has likely been made. */
const RELOAD_AFTER_RETRY_MS = 1000;
/** After "Retry now" the page refreshes until the new attempt shows, for at most this long. */
const RETRY_WAIT_MS = 30_000;
/** setTimeout's longest delay (about 24.8 days): a later next attempt is looked at again then. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;
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

/** A retry asked for, and whether its attempt has shown: the page refreshes while it is awaited, until RETRY_WAIT_MS. */
interface Retried {
  kind: keyof typeof RETRIED;
  attemptsBefore: number;
  phase: 'awaited' | 'shown' | 'not shown';
}

/**
 * How the page keeps the message current: every REFRESH_MS while an attempt is under way or the next
 * one is due within POLL_WHEN_DUE_WITHIN_MS; else one reload when the next attempt is due; nothing for
 * a finished message or one waiting for its webhook to be activated.
 */
function watchOf(delivery: DeliveryDetail, now: number): { poll: boolean; reloadAt?: number } {
  if (delivery.attemptUnderWay) return { poll: true };
  if (delivery.status !== 'pending' || delivery.waitingForActivation || delivery.nextAttemptAt === undefined) return { poll: false };
  return delivery.nextAttemptAt - now <= POLL_WHEN_DUE_WITHIN_MS ? { poll: true } : { poll: false, reloadAt: delivery.nextAttemptAt };
}

/** `/console/webhooks/<id>/deliveries/<messageId>`: one message, its body as sent and its attempts. */
export function DeliveryPage({ id, messageId }: { id: string; messageId: string }) {
  const [retried, setRetried] = useState<Retried>();
  const retryHintId = useId();
  const webhook = useLoad((signal) => answer(api.GET('/v1/webhooks/{id}', { params: { path: { id } }, signal })), [id]);
  const [polling, setPolling] = useState(false);
  const delivery = useLoad(
    (signal) => answer(api.GET('/v1/webhooks/{id}/deliveries/{messageId}', { params: { path: { id, messageId } }, signal })),
    [id, messageId],
    { refreshMs: polling ? REFRESH_MS : undefined },
  );
  const { data, reload } = delivery;
  const watch = useMemo(() => (data ? watchOf(data, Date.now()) : { poll: false }), [data]);
  const awaitingRetry = retried?.phase === 'awaited';
  useEffect(() => setPolling(watch.poll || awaitingRetry), [watch, awaitingRetry]);

  useEffect(() => {
    if (data && retried?.phase === 'awaited' && data.attempts > retried.attemptsBefore) setRetried({ ...retried, phase: 'shown' });
  }, [data, retried]);
  useEffect(() => {
    if (!awaitingRetry) return;
    const soon = setTimeout(() => void reload(), RELOAD_AFTER_RETRY_MS);
    const deadline = setTimeout(() => setRetried((now) => (now?.phase === 'awaited' ? { ...now, phase: 'not shown' } : now)), RETRY_WAIT_MS);
    return () => {
      clearTimeout(soon);
      clearTimeout(deadline);
    };
  }, [awaitingRetry, reload]);
  useEffect(() => {
    if (polling || watch.reloadAt === undefined) return;
    const timer = setTimeout(() => void reload(), Math.min(Math.max(watch.reloadAt - Date.now(), 0), LONGEST_TIMER_MS));
    return () => clearTimeout(timer);
  }, [polling, watch, reload]);

  const retry = useAction(async () => {
    setRetried(undefined);
    const kind = data?.status === 'pending' ? 'pending' : 'finished';
    await answer(api.POST('/v1/webhooks/{id}/deliveries/{messageId}/retry', { params: { path: { id, messageId } } }));
    setRetried({ kind, attemptsBefore: data?.attempts ?? 0, phase: 'awaited' });
  });

  return (
    <>
      <nav aria-label="Breadcrumb" class="breadcrumb">
        <a href={paths.webhooks}>Webhooks</a> › <a href={paths.webhook(id)}>{webhook.data ? webhookTitle(webhook.data) : 'Webhook'}</a> ›{' '}
        <a href={paths.webhook(id, 'deliveries')}>Deliveries</a>
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
      <p role="status">{retried && `${RETRIED[retried.kind]} ${retryProgress(retried)}`}</p>
      <ErrorNotice title={retry.error instanceof ApiFailure && retry.error.statusCode === 409 ? 'Not retried now' : 'Not retried'} error={retry.error} />
      <Loads loaded={delivery} errorTitle="Could not load the delivery" loadingText="Loading the delivery">
        {(detail) => <DeliveryView webhookId={id} delivery={detail} refreshing={polling ? 'polling' : watch.reloadAt !== undefined ? 'when due' : undefined} />}
      </Loads>
    </>
  );
}

function retryProgress(retried: Retried): string {
  switch (retried.phase) {
    case 'awaited':
      return 'This page refreshes until the attempt shows.';
    case 'shown':
      return 'The attempt is below.';
    case 'not shown':
      return `No new attempt showed within ${formatInterval(RETRY_WAIT_MS)}: reload the page to look again.`;
  }
}

function DeliveryView({ webhookId, delivery, refreshing }: { webhookId: string; delivery: DeliveryDetail; refreshing: 'polling' | 'when due' | undefined }) {
  const body = useMemo(() => prettyJson(delivery.body), [delivery.body]);
  return (
    <>
      <dl class="properties card">
        <dt>Status</dt>
        <dd>
          <StatusBadge status={delivery.status} />
          {delivery.attemptUnderWay && ' An attempt is under way.'}
          {delivery.waitingForActivation && ' Waits for the webhook to be activated.'}
          {refreshing && <span class="muted"> {refreshing === 'polling' ? `Refreshes every ${formatInterval(REFRESH_MS)}.` : 'Refreshes when the next attempt is due.'}</span>}
        </dd>
        <dt>Created</dt>
        <dd>{formatTime(delivery.createdAt)}</dd>
        <dt>Attempts</dt>
        <dd>{formatCount(delivery.attempts)}</dd>
        <dt>Next attempt</dt>
        <dd>{delivery.status === 'pending' ? formatTime(delivery.nextAttemptAt) : delivery.status === 'succeeded' ? 'None: delivered' : 'None: failed (Retry now sends it once more)'}</dd>
        <dt>Event type</dt>
        <dd class="mono">{delivery.eventType}</dd>
        {delivery.transactionHash !== undefined && (
          <>
            <dt>Transaction</dt>
            <dd>
              <code class="break">{delivery.transactionHash}</code>{' '}
              {delivery.blockNumber === TEST_NOTIFICATION_BLOCK ? (
                <span class="muted">test notification: no such transaction</span>
              ) : (
                <CopyButton text={delivery.transactionHash} label="Copy transaction hash" />
              )}
            </dd>
          </>
        )}
        {delivery.blockNumber !== undefined && (
          <>
            <dt>Block</dt>
            <dd>{delivery.blockNumber}</dd>
          </>
        )}
        {delivery.backfillId && (
          <>
            <dt>Recorded by</dt>
            <dd>
              <a href={paths.webhook(webhookId, 'backfills')}>backfill {delivery.backfillId}</a>
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
        <a href={paths.webhook(webhookId, 'deliveries')}>Back to the deliveries</a>
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
