import { Fragment } from 'preact';
import { useEffect, useId, useMemo, useRef, useState } from 'preact/hooks';
import { ADDRESSES_PER_CALL, answer, api, type Webhook } from '../../api/client';
import { formatCount, formatCounted } from '../../format';
import { useLoad } from '../../hooks';
import { ErrorNotice, Loads, messageOf, Pager, usePages } from '../../ui/components';
import { AddressChangeStopped, addressesChanged, changeAddresses, countAddresses, parseAddresses, type AddressChange, type ParsedAddresses } from './address-changes';

const PAGE_SIZE = 100;

/** The webhook's addresses, paged, and a form to add or remove many at once. */
export function AddressesTab({ webhook }: { webhook: Webhook }) {
  const pages = usePages();
  const list = useLoad(
    (signal) => answer(api.GET('/v1/webhooks/{id}/addresses', { params: { path: { id: webhook.id }, query: { pageSize: PAGE_SIZE, pageToken: pages.pageToken } }, signal })),
    [webhook.id, pages.pageToken],
  );
  return (
    <>
      <AddressChangeForm webhookId={webhook.id} onChanged={() => void pages.showFirstPage(list.reload)} />
      <section aria-labelledby="address-list">
        <h2 id="address-list">Watched addresses</h2>
        <Loads loaded={list} errorTitle="Could not load the addresses" loadingText="Loading the addresses">
          {({ totalAddresses, addresses, nextPageToken }) => (
            <>
              <p>
                {plural(totalAddresses)} in all
                {totalAddresses > PAGE_SIZE && `, ${PAGE_SIZE} a page`}.
              </p>
              {addresses.length > 0 && (
                <ol class="address-list mono" start={(pages.pageNumber - 1) * PAGE_SIZE + 1}>
                  {addresses.map((address) => (
                    <li key={address}>{address}</li>
                  ))}
                </ol>
              )}
              <Pager pages={pages} nextPageToken={nextPageToken} label="Addresses" />
            </>
          )}
        </Loads>
      </section>
    </>
  );
}

/** `changed`: how many of the addresses sent were added or removed (the rest already were, or were not watched); undefined when unknown. */
type Progress =
  | { state: 'idle' }
  | { state: 'running'; change: AddressChange; sent: number; total: number; waitingSeconds?: number }
  | { state: 'done'; change: AddressChange; sent: number; total: number; changed: number | undefined; cancelled: boolean }
  | { state: 'stopped'; change: AddressChange; sent: number; total: number; changed: number | undefined; error: unknown };

const verbs = {
  add: { done: 'Added', doing: 'Adding', unchanged: ['was already watched', 'were already watched'] },
  remove: { done: 'Removed', doing: 'Removing', unchanged: ['was not watched', 'were not watched'] },
} as const;
const plural = (count: number) => formatCounted(count, 'address', 'addresses');

/** "Added 3 addresses (1 was already watched)": what changed of the addresses sent. */
function changedWords(change: AddressChange, sent: number, changed: number | undefined): string {
  const { done, unchanged } = verbs[change];
  if (changed === undefined) return `${done} ${plural(sent)}`;
  const rest = sent - changed;
  return `${done} ${plural(changed)}${rest > 0 ? ` (${formatCounted(rest, unchanged[0], unchanged[1])})` : ''}`;
}

function AddressChangeForm({ webhookId, onChanged }: { webhookId: string; onChanged: () => void }) {
  const [pasted, setPasted] = useState('');
  const [file, setFile] = useState<{ name: string; text: string }>();
  const [fileError, setFileError] = useState<unknown>();
  const [progress, setProgress] = useState<Progress>({ state: 'idle' });
  const cancelRequested = useRef(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const ids = { text: useId(), textHint: useId(), file: useId(), progress: useId(), parsed: useId() };
  const parsed = useMemo(() => parseAddresses(`${pasted}\n${file?.text ?? ''}`), [pasted, file]);
  const running = progress.state === 'running';
  // Leaving the page stops a change between two calls, and nothing is set on the page left.
  const left = useRef(false);
  useEffect(
    () => () => {
      left.current = true;
    },
    [],
  );
  // Closing or reloading the tab mid-change asks first: the calls not yet sent would not be.
  useEffect(() => {
    if (!running) return;
    const warn = (event: BeforeUnloadEvent) => event.preventDefault();
    addEventListener('beforeunload', warn);
    return () => removeEventListener('beforeunload', warn);
  }, [running]);

  const readFile = async (input: HTMLInputElement) => {
    setFileError(undefined);
    const chosen = input.files?.[0];
    if (!chosen) return setFile(undefined);
    try {
      setFile({ name: chosen.name, text: await chosen.text() });
    } catch (failure) {
      setFile(undefined);
      setFileError(failure);
    }
  };

  const run = async (change: AddressChange) => {
    const { addresses } = parsed;
    if (addresses.length === 0 || running) return;
    cancelRequested.current = false;
    const total = addresses.length;
    setProgress({ state: 'running', change, sent: 0, total });
    const before = await countAddresses(webhookId);
    try {
      // Each callback is called between calls, when the page may have been left.
      const sent = await changeAddresses(webhookId, change, addresses, {
        onSent: (count) => {
          if (!left.current) setProgress({ state: 'running', change, sent: count, total });
        },
        onWaiting: (seconds) => {
          if (!left.current) setProgress((now) => (now.state === 'running' ? { ...now, waitingSeconds: seconds } : now));
        },
        cancelled: () => cancelRequested.current || left.current,
      });
      const after = left.current ? undefined : await countAddresses(webhookId);
      if (left.current) return;
      const cancelled = sent < total;
      setProgress({ state: 'done', change, sent, total, changed: addressesChanged(change, sent, before, after), cancelled });
      if (!cancelled) {
        setPasted('');
        setFile(undefined);
        if (fileInput.current) fileInput.current.value = '';
      }
    } catch (failure) {
      if (left.current) return;
      const sent = failure instanceof AddressChangeStopped ? failure.sent : 0;
      const changed = addressesChanged(change, sent, before, await countAddresses(webhookId));
      if (left.current) return;
      setProgress({ state: 'stopped', change, sent, total, changed, error: failure instanceof AddressChangeStopped ? failure.reason : failure });
    }
    onChanged();
  };

  return (
    <section class="card" aria-labelledby="address-change">
      <h2 id="address-change">Add or remove addresses</h2>
      <form onSubmit={(event) => event.preventDefault()}>
        <div class="field">
          <label for={ids.text}>Addresses to add or remove</label>
          <textarea
            id={ids.text}
            value={pasted}
            onInput={(event) => setPasted(event.currentTarget.value)}
            aria-describedby={`${ids.textHint} ${ids.parsed}`}
            spellcheck={false}
            autoComplete="off"
            disabled={running}
          />
          <p class="hint" id={ids.textHint}>
            Separated by line ends, spaces, commas or semicolons. Each is sent once; the API takes {formatCount(ADDRESSES_PER_CALL)} a call, so a longer list is sent in
            several calls, one after another.
          </p>
        </div>
        <div class="field">
          <label for={ids.file}>Upload a file of addresses</label>
          <input id={ids.file} ref={fileInput} type="file" accept=".txt,.csv,text/plain,text/csv" onChange={(event) => void readFile(event.currentTarget)} disabled={running} />
          <ErrorNotice title="Could not read the file" error={fileError} />
        </div>
        <ParsedSummary id={ids.parsed} parsed={parsed} fileName={file?.name} />
        <div class="form-actions">
          <button type="button" class="primary" onClick={() => void run('add')} disabled={running || parsed.addresses.length === 0}>
            Add addresses
          </button>
          <button type="button" onClick={() => void run('remove')} disabled={running || parsed.addresses.length === 0}>
            Remove addresses
          </button>
          {running && (
            <button type="button" onClick={() => (cancelRequested.current = true)}>
              Cancel
            </button>
          )}
        </div>
      </form>
      {progress.state !== 'idle' && (
        <div class="field">
          <label for={ids.progress}>Progress</label>
          <progress id={ids.progress} max={progress.total} value={progress.sent}>
            {plural(progress.sent)} of {formatCount(progress.total)}
          </progress>
        </div>
      )}
      <p role="status" class="progress-status">
        {progressMessage(progress)}
      </p>
      {progress.state === 'stopped' && (
        <div class="notice notice-error" role="alert">
          <strong>
            Sent {formatCount(progress.sent)} of {plural(progress.total)}, then stopped
            {progress.sent > 0 && ` (${changedWords(progress.change, progress.sent, progress.changed).toLowerCase()})`}:
          </strong>{' '}
          {messageOf(progress.error)}
        </div>
      )}
    </section>
  );
}

function progressMessage(progress: Progress): string {
  switch (progress.state) {
    case 'idle':
    case 'stopped':
      return '';
    case 'running': {
      const waiting = progress.waitingSeconds ? ` Another change of these addresses is under way: trying again in ${progress.waitingSeconds} s.` : '';
      return `${verbs[progress.change].doing} ${plural(progress.total)}: ${formatCount(progress.sent)} sent.${waiting}`;
    }
    case 'done':
      return progress.cancelled
        ? `Cancelled after sending ${formatCount(progress.sent)} of ${plural(progress.total)}: ${changedWords(progress.change, progress.sent, progress.changed).toLowerCase()}.`
        : changedWords(progress.change, progress.sent, progress.changed);
  }
}

function ParsedSummary({ id, parsed, fileName }: { id: string; parsed: ParsedAddresses; fileName: string | undefined }) {
  return (
    <div id={id} class="parsed-summary">
      <p>
        {plural(parsed.addresses.length)} to send{fileName && <> (the text above and the file {fileName})</>}.
      </p>
      {parsed.skipped > 0 && (
        <p class="notice notice-warning">
          {formatCounted(parsed.skipped, 'entry is', 'entries are')} not an address (0x and 40 hexadecimal digits) and will be skipped, such
          as:{' '}
          {parsed.skippedExamples.map((example, index) => (
            <Fragment key={index}>
              {index > 0 && ', '}
              <code>{example}</code>
            </Fragment>
          ))}
        </p>
      )}
    </div>
  );
}
