import { useEffect, useId, useState } from 'preact/hooks';
import { answer, api, fieldMessages, type Backfill, type Webhook } from '../../api/client';
import { formatCount, formatInterval, formatTime } from '../../format';
import { useAction, useLoad } from '../../hooks';
import { ErrorNotice, Field, Loads, messageOf, Pager, StatusBadge, usePages } from '../../ui/components';
import { loadChains } from '../chains';

const PAGE_SIZE = 25;
const REFRESH_MS = 3000;

/** The webhook's backfills (newest first), refreshed while one runs, and a form to start one. */
export function BackfillsTab({ webhook }: { webhook: Webhook }) {
  const pages = usePages();
  const [running, setRunning] = useState(false);
  const list = useLoad(
    (signal) => answer(api.GET('/v1/webhooks/{id}/backfills', { params: { path: { id: webhook.id }, query: { pageSize: PAGE_SIZE, pageToken: pages.pageToken } }, signal })),
    [webhook.id, pages.pageToken],
    { refreshMs: running ? REFRESH_MS : undefined },
  );
  useEffect(() => {
    if (list.data) setRunning(list.data.backfills.some(({ status }) => status === 'running'));
  }, [list.data]);
  return (
    <>
      <StartBackfillForm webhook={webhook} onStarted={() => void pages.showFirstPage(list.reload)} />
      <section aria-labelledby="backfill-list">
        <h2 id="backfill-list">Backfills</h2>
        {running && <p class="muted">Refreshes every {formatInterval(REFRESH_MS)} while a backfill runs.</p>}
        <Loads loaded={list} errorTitle="Could not load the backfills" loadingText="Loading the backfills">
          {({ backfills, nextPageToken }) => (
            <>
              {backfills.length === 0 ? <p>No backfills yet.</p> : <BackfillTable webhookId={webhook.id} backfills={backfills} onCancelled={() => void list.reload()} />}
              <Pager pages={pages} nextPageToken={nextPageToken} label="Backfills" />
            </>
          )}
        </Loads>
      </section>
    </>
  );
}

function BackfillTable({ webhookId, backfills, onCancelled }: { webhookId: string; backfills: Backfill[]; onCancelled: () => void }) {
  const [cancelled, setCancelled] = useState<string>();
  const cancel = useAction(async (backfillId: string) => {
    setCancelled(undefined);
    await answer(api.DELETE('/v1/webhooks/{id}/backfills/{backfillId}', { params: { path: { id: webhookId, backfillId } } }));
    setCancelled(backfillId);
    onCancelled();
  });
  return (
    <>
      <p role="status">{cancelled && `Backfill ${cancelled} cancelled: the notifications it recorded are still sent.`}</p>
      <ErrorNotice title="Not cancelled" error={cancel.error} />
      <div class="table-scroll">
        <table class="stacked">
          <thead>
            <tr>
              <th scope="col">Backfill</th>
              <th scope="col">Status</th>
              <th scope="col">Blocks</th>
              <th scope="col" class="number">
                Next block
              </th>
              <th scope="col" class="number">
                Notifications recorded
              </th>
              <th scope="col">Created</th>
              <th scope="col">Reason</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {backfills.map((backfill) => (
              <tr key={backfill.backfillId}>
                <th scope="row" class="mono break" data-label="Backfill">
                  {backfill.backfillId}
                </th>
                <td data-label="Status">
                  <StatusBadge status={backfill.status} />
                  {backfill.status === 'running' && <div class="muted">{percentDone(backfill)} done</div>}
                </td>
                <td data-label="Blocks">
                  {formatCount(backfill.fromBlock)} to {formatCount(backfill.toBlock)}
                </td>
                <td class="number" data-label="Next block">
                  {formatCount(backfill.nextBlock)}
                </td>
                <td class="number" data-label="Notifications recorded">
                  {formatCount(backfill.notifications)}
                </td>
                <td data-label="Created">
                  {formatTime(backfill.createdAt)}
                  {backfill.endedAt !== undefined && <div class="muted">ended {formatTime(backfill.endedAt)}</div>}
                </td>
                <td class="break" data-label="Reason">
                  {backfill.reason ?? '—'}
                </td>
                <td>
                  {backfill.status === 'running' && (
                    <button type="button" aria-label={`Cancel backfill ${backfill.backfillId}`} onClick={() => void cancel.run(backfill.backfillId)} disabled={cancel.busy}>
                      Cancel
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function percentDone({ fromBlock, toBlock, nextBlock }: Backfill): string {
  const blocks = toBlock - fromBlock + 1;
  return `${Math.floor(((nextBlock - fromBlock) / Math.max(blocks, 1)) * 100)} %`;
}

function StartBackfillForm({ webhook, onStarted }: { webhook: Webhook; onStarted: () => void }) {
  const [fromBlock, setFromBlock] = useState('');
  const [toBlock, setToBlock] = useState('');
  const [startedId, setStartedId] = useState<string>();
  const chains = useLoad(loadChains, []);
  const checkpoint = chains.data?.find(({ chainId }) => chainId === webhook.chainId)?.follower.checkpointBlock;
  const headingId = useId();
  const start = useAction(async () => {
    setStartedId(undefined);
    const body = { fromBlock: Number(fromBlock), ...(toBlock.trim() ? { toBlock: Number(toBlock) } : {}) };
    const backfill = await answer(api.POST('/v1/webhooks/{id}/backfills', { params: { path: { id: webhook.id } }, body }));
    setStartedId(backfill.backfillId);
    setFromBlock('');
    setToBlock('');
    onStarted();
  });
  const { fields, other } = start.error ? fieldMessages(start.error) : { fields: {}, other: [] };
  return (
    <section class="card" aria-labelledby={headingId}>
      <h2 id={headingId}>Start a backfill</h2>
      <p>
        Notifies the webhook of its addresses' activity in past blocks, as it would have been notified live. One backfill runs at a time per webhook.
      </p>
      <form
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          void start.run();
        }}
      >
        <BlockField label="From block" error={fields.fromBlock} value={fromBlock} onInput={setFromBlock} required />
        <BlockField
          label="To block"
          error={fields.toBlock}
          hint={checkpoint !== undefined ? `Optional: by default the chain's checkpoint, block ${formatCount(checkpoint)}.` : "Optional: by default the chain's checkpoint."}
          value={toBlock}
          onInput={setToBlock}
        />
        <button type="submit" class="primary" disabled={start.busy}>
          {start.busy ? 'Starting…' : 'Start backfill'}
        </button>
      </form>
      <p role="status">{startedId && `Backfill ${startedId} started.`}</p>
      <ErrorNotice title="No backfill started" error={other.length > 0 ? other.join('; ') : undefined} />
      {Object.keys(fields).length > 0 && other.length === 0 && (
        <p class="visually-hidden" role="alert">
          No backfill started: {messageOf(start.error)}
        </p>
      )}
    </section>
  );
}

/** A block number's field, with the API's 400 for it beside it. */
function BlockField(props: { label: string; error?: string; hint?: string; value: string; onInput: (value: string) => void; required?: boolean }) {
  return (
    <Field label={props.label} error={props.error} hint={props.hint}>
      {({ id, describedBy, invalid }) => (
        <input
          id={id}
          type="number"
          inputMode="numeric"
          min={0}
          step={1}
          value={props.value}
          onInput={(event) => props.onInput(event.currentTarget.value)}
          aria-describedby={describedBy}
          aria-invalid={invalid || undefined}
          required={props.required}
        />
      )}
    </Field>
  );
}
