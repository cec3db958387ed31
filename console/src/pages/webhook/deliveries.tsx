import { useEffect, useRef, useState } from 'preact/hooks';
import { answer, api, type Delivery, type Webhook } from '../../api/client';
import { formatCount, formatCounted, formatDuration, formatInterval, formatTime } from '../../format';
import { useAction, useLoad } from '../../hooks';
import { ErrorNotice, Field, Loads, Pager, StatusBadge, StatusFilter, usePages } from '../../ui/components';
import { paths } from '../../paths';
import { EndpointStateLine } from './endpoint-state';

const PAGE_SIZE = 25;
const REFRESH_MS = 5000;
/** The failed messages one recover call queues again, at most (openapi.json's recoverFailedDeliveries). */
const RECOVERED_PER_CALL = 1000;
const STATUSES = ['pending', 'succeeded', 'failed'] as const;
type ListedStatus = (typeof STATUSES)[number] | '';

/** The webhook's delivery log, newest first; its first page refreshes on its own. */
export function DeliveriesTab({ webhook }: { webhook: Webhook }) {
  const [status, setStatus] = useState<ListedStatus>('');
  const pages = usePages();
  const firstPage = pages.pageNumber === 1;
  const view = `${webhook.id}/${status}/${pages.pageToken ?? ''}`;
  const loaded = useLoad(
    async (signal) => {
      const query = { pageSize: PAGE_SIZE, pageToken: pages.pageToken, status: status || undefined };
      return { view, log: await answer(api.GET('/v1/webhooks/{id}/deliveries', { params: { path: { id: webhook.id }, query }, signal })) };
    },
    [view],
    { refreshMs: firstPage ? REFRESH_MS : undefined },
  );
  const newCount = useNewDeliveries(loaded.data);

  return (
    <>
      <div class="toolbar">
        <StatusFilter
          statuses={STATUSES}
          value={status}
          onChange={(value) => {
            setStatus(value);
            pages.reset();
          }}
        />
        <p class="muted">
          {firstPage ? `Refreshes every ${formatInterval(REFRESH_MS)}.` : 'Go back to the first page to see new deliveries as they come.'}{' '}
          <span role="status" aria-live="polite">
            {newCount > 0 && formatCounted(newCount, 'new delivery', 'new deliveries')}
          </span>
        </p>
      </div>
      <Loads loaded={loaded} errorTitle="Could not load the deliveries" loadingText="Loading the deliveries">
        {({ log }) => (
          <>
            <EndpointStateLine endpoint={log.endpoint} />
            {log.deliveries.length === 0 ? (
              <p>{status ? `No ${status} deliveries on this page.` : 'No deliveries yet: notifications show here as they are sent.'}</p>
            ) : (
              <DeliveryTable webhookId={webhook.id} deliveries={log.deliveries} />
            )}
            <Pager pages={pages} nextPageToken={log.nextPageToken} label="Deliveries" />
          </>
        )}
      </Loads>
      <RecoverForm webhookId={webhook.id} onRecovered={loaded.reload} />
    </>
  );
}

/**
 * How many deliveries appeared since the page was opened (or filtered), counted from the ids each
 * refresh of the same view brings: announced politely instead of having the whole table read out again.
 */
function useNewDeliveries(loaded: { view: string; log: { deliveries: Delivery[] } } | undefined): number {
  const seen = useRef<{ view: string; ids: Set<string> } | undefined>(undefined);
  const [count, setCount] = useState(0);
  useEffect(() => {
    if (!loaded) return;
    const ids = loaded.log.deliveries.map(({ messageId }) => messageId);
    if (seen.current?.view !== loaded.view) {
      seen.current = { view: loaded.view, ids: new Set(ids) };
      setCount(0);
      return;
    }
    const known = seen.current.ids;
    const fresh = ids.filter((id) => !known.has(id));
    if (fresh.length === 0) return;
    for (const id of fresh) known.add(id);
    setCount((total) => total + fresh.length);
  }, [loaded]);
  return count;
}

function DeliveryTable({ webhookId, deliveries }: { webhookId: string; deliveries: Delivery[] }) {
  return (
    <div class="table-scroll">
      <table class="stacked">
        <caption class="visually-hidden">Deliveries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Message</th>
            <th scope="col">Transaction</th>
            <th scope="col">Created</th>
            <th scope="col">Status</th>
            <th scope="col" class="number">
              Attempts
            </th>
            <th scope="col">Last attempt</th>
            <th scope="col" class="number">
              Last status code
            </th>
            <th scope="col">Last error</th>
            <th scope="col">Next attempt</th>
          </tr>
        </thead>
        <tbody>
          {deliveries.map((delivery) => (
            <tr key={delivery.messageId}>
              <th scope="row" class="mono break" data-label="Message">
                <a href={paths.delivery(webhookId, delivery.messageId)}>{delivery.messageId}</a>
              </th>
              <td data-label="Transaction">
                <TransactionSummary delivery={delivery} />
              </td>
              <td data-label="Created">{formatTime(delivery.createdAt)}</td>
              <td data-label="Status">
                <StatusBadge status={delivery.status} />
                {delivery.attemptUnderWay && <div class="muted">attempt under way</div>}
                {delivery.waitingForActivation && <div class="muted">waits for the webhook to be activated</div>}
              </td>
              <td class="number" data-label="Attempts">
                {formatCount(delivery.attempts)}
              </td>
              <td data-label="Last attempt">
                {formatTime(delivery.lastAttemptAt)}
                {delivery.lastDurationMs !== undefined && <div class="muted">{formatDuration(delivery.lastDurationMs)}</div>}
              </td>
              <td class="number" data-label="Last status code">
                {delivery.lastResponseStatusCode ?? '—'}
              </td>
              <td class="break" data-label="Last error">
                {delivery.lastError ?? '—'}
              </td>
              <td data-label="Next attempt">{delivery.status === 'pending' ? formatTime(delivery.nextAttemptAt) : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A test notification's block number: its transaction is made up. */
export const TEST_NOTIFICATION_BLOCK = '0';

/** "0x1234…abcd": enough to tell transactions apart in a list. */
const shortHash = (hash: string) => `${hash.slice(0, 6)}…${hash.slice(-4)}`;

/** The message's transaction, its hash shortened on screen and read out whole, and its block; "test notification" for one. */
function TransactionSummary({ delivery: { transactionHash, blockNumber } }: { delivery: Delivery }) {
  if (transactionHash === undefined) return <span class="muted">—</span>;
  if (blockNumber === TEST_NOTIFICATION_BLOCK) return <span class="muted">test notification</span>;
  return (
    <>
      <code>
        <span aria-hidden="true">{shortHash(transactionHash)}</span>
        <span class="visually-hidden">{transactionHash}</span>
      </code>
      {blockNumber !== undefined && <div class="muted">block {blockNumber}</div>}
    </>
  );
}

/** Queues again the failed messages created since a time the user picks (in their time zone). */
function RecoverForm({ webhookId, onRecovered }: { webhookId: string; onRecovered: () => Promise<void> }) {
  const [since, setSince] = useState('');
  const [queued, setQueued] = useState<number>();
  const recover = useAction(async () => {
    setQueued(undefined);
    const sinceMs = new Date(since).getTime();
    if (!since || Number.isNaN(sinceMs)) throw new Error('Choose the date and time from which failed messages are sent again.');
    const { messages } = await answer(api.POST('/v1/webhooks/{id}/recover', { params: { path: { id: webhookId } }, body: { since: sinceMs } }));
    setQueued(messages);
    await onRecovered();
  });
  return (
    <section class="card recover" aria-labelledby="recover-heading">
      <h2 id="recover-heading">Send failed messages again</h2>
      <form
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          void recover.run();
        }}
      >
        <Field label="Failed since" hint={<>Failed messages created since then get one more attempt each, at most {formatCount(RECOVERED_PER_CALL)} a call.</>}>
          {({ id, describedBy }) => (
            <input id={id} type="datetime-local" value={since} onInput={(event) => setSince(event.currentTarget.value)} aria-describedby={describedBy} required />
          )}
        </Field>
        <button type="submit" disabled={recover.busy}>
          {recover.busy ? 'Recovering…' : 'Recover'}
        </button>
      </form>
      <p role="status">
        {queued !== undefined &&
          `${formatCounted(queued, 'failed message', 'failed messages')} queued again.${queued >= RECOVERED_PER_CALL ? ' Recover again to queue the rest.' : ''}`}
      </p>
      <ErrorNotice title="Nothing recovered" error={recover.error} />
    </section>
  );
}
