import { useEffect, useRef, useState } from 'preact/hooks';
import { answer, api, fieldMessages, type ApiKey } from '../api/client';
import { formatAgo, formatTime, shownName } from '../format';
import { useAction, useLoad } from '../hooks';
import { session } from '../session';
import { ConfirmDialog, CopyButton, ErrorNotice, Field, Loading, Notice, PageHeader, Pager, StatusBadge, usePages } from '../ui/components';

const PAGE_SIZE = 25;

/** The account's API keys: listed by id, created (the key shown this once), revoked by id. */
export function ApiKeysPage() {
  const pages = usePages();
  const keys = useLoad((signal) => answer(api.GET('/v1/apiKeys', { params: { query: { pageSize: PAGE_SIZE, pageToken: pages.pageToken } }, signal })), [pages.pageToken]);
  const [name, setName] = useState('');
  const [created, setCreated] = useState<string>();
  const [revoking, setRevoking] = useState<ApiKey>();
  const [revoked, setRevoked] = useState<string>();
  const createButton = useRef<HTMLButtonElement>(null);

  const create = useAction(async () => {
    const { key } = await answer(api.POST('/v1/apiKeys', { body: name.trim() ? { name: name.trim() } : {} }));
    setRevoked(undefined);
    setName('');
    setCreated(key);
    await pages.showFirstPage(keys.reload);
  });
  const nameError = create.error ? fieldMessages(create.error).fields.name : undefined;

  const revoke = useAction(async (target: ApiKey) => {
    await answer(api.DELETE('/v1/apiKeys/{keyId}', { params: { path: { keyId: target.keyId } } }));
    if (target.current) {
      session.signOut(`The key this console was signed in with (${target.keyId}) was revoked. Sign in with another key.`);
      return;
    }
    // The list shows the key as revoked before the notice says so.
    await keys.reload();
    setRevoking(undefined);
    setRevoked(target.keyId);
  });

  return (
    <>
      <PageHeader title="API keys" />
      <p>
        Each key signs in to this console and calls the API for this account. Only a key's id is kept readable (the first 12 hex digits of its SHA-256): a
        key is shown once, when it is made. A revoked key stops working within a minute. "Last used" is kept to within an hour.
      </p>
      <form
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          create.run();
        }}
      >
        <Field label="Name of the new key (optional)" hint='What or who will use it, e.g. "CI" or "billing service": shown in the list below.' error={nameError}>
          {({ id, describedBy, invalid }) => (
            <input id={id} value={name} maxLength={256} aria-describedby={describedBy} aria-invalid={invalid} onInput={(event) => setName(event.currentTarget.value)} />
          )}
        </Field>
        <button type="submit" class="primary" ref={createButton} disabled={create.busy || created !== undefined}>
          {create.busy ? 'Creating…' : 'Create key'}
        </button>
      </form>
      {!nameError && <ErrorNotice error={create.error} title="No key created" />}
      {created !== undefined && (
        <NewKey
          value={created}
          onStored={() => {
            setCreated(undefined);
            // The button is disabled while the key is shown: focus it once it is enabled again.
            setTimeout(() => createButton.current?.focus());
          }}
        />
      )}
      {revoked && <Notice tone="success">Key {revoked} was revoked.</Notice>}

      <ErrorNotice error={keys.error} title="The keys could not be loaded" />
      {!keys.data && keys.loading && <Loading what="Loading the keys" />}
      {keys.data && (
        <>
          <div class="table-scroll">
            <table class="stacked">
              <caption class="visually-hidden">The account's API keys, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Key id</th>
                  <th scope="col">Name</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Status</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.data.apiKeys.map((key) => (
                  <KeyRow key={key.keyId} apiKey={key} onRevoke={() => (revoke.clearError(), setRevoking(key))} />
                ))}
              </tbody>
            </table>
          </div>
          {keys.data.apiKeys.length === 0 && <p class="muted">No keys on this page.</p>}
          <Pager pages={pages} nextPageToken={keys.data.nextPageToken} label="API keys" />
        </>
      )}

      <ConfirmDialog
        open={revoking !== undefined}
        title={`Revoke key ${revoking?.keyId ?? ''}${revoking?.name ? ` (${shownName(revoking.name)})` : ''}?`}
        confirmLabel="Revoke"
        danger
        busy={revoke.busy}
        error={revoke.error}
        onConfirm={() => revoking && revoke.run(revoking)}
        onCancel={() => setRevoking(undefined)}
      >
        <p>
          Callers using key <code>{revoking?.keyId}</code> are refused within a minute. A revoked key cannot be restored: make a new one for whoever needs it.
        </p>
        {revoking?.current && (
          <p class="notice notice-warning">
            <strong>This is the key this console is signed in with.</strong> Revoking it signs you out: sign in again with another key.
          </p>
        )}
      </ConfirmDialog>
    </>
  );
}

function KeyRow({ apiKey, onRevoke }: { apiKey: ApiKey; onRevoke: () => void }) {
  return (
    <tr>
      <th scope="row" class="mono" data-label="Key id">
        {apiKey.keyId}
        {apiKey.current && <span class="badge badge-current">this key</span>}
      </th>
      <td class="break" data-label="Name">
        {apiKey.name ? shownName(apiKey.name) : <span class="muted">none</span>}
      </td>
      <td data-label="Created">{formatTime(apiKey.createdAt)}</td>
      <td data-label="Last used">
        {formatAgo(apiKey.lastUsedAt)}
        {apiKey.lastUsedAt !== undefined && <span class="full-time muted">{formatTime(apiKey.lastUsedAt)}</span>}
      </td>
      <td data-label="Status">
        {apiKey.revokedAt === undefined ? (
          <StatusBadge status="active" />
        ) : (
          <>
            <StatusBadge status="revoked" /> <span class="full-time muted">{formatTime(apiKey.revokedAt)}</span>
          </>
        )}
      </td>
      <td>
        {apiKey.revokedAt === undefined && (
          <button type="button" class="danger-outline" aria-label={`Revoke key ${apiKey.keyId}`} onClick={onRevoke}>
            Revoke
          </button>
        )}
      </td>
    </tr>
  );
}

/** The key just made, shown this once in a read-only field, until the user says it is stored. */
function NewKey({ value, onStored }: { value: string; onStored: () => void }) {
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => {
    field.current?.focus();
    field.current?.select();
  }, [value]);
  return (
    <section class="card new-key" aria-labelledby="new-key-heading">
      <h2 id="new-key-heading">Your new key</h2>
      <p class="notice notice-warning">
        Store it now (in a password manager or a secrets store): it is not shown again. Only its id stays in the list below.
      </p>
      <Field label="New key">
        {({ id }) => <input id={id} ref={field} class="mono" readOnly value={value} autoComplete="off" spellcheck={false} />}
      </Field>
      <div class="secret-actions">
        <CopyButton text={value} label="Copy key" />
        <button type="button" onClick={onStored}>
          I have stored it
        </button>
      </div>
    </section>
  );
}
