import { useEffect, useId, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ADDRESSES_PER_CALL, answer, api, ApiFailure, fieldMessages, type Chain, type Webhook } from '../api/client';
import { splitEntries } from '../entries';
import { formatCount, webhookTitle } from '../format';
import { useLoad, type Loaded } from '../hooks';
import { paths } from '../paths';
import { ErrorNotice, Field, Loading, Notice, PageHeader } from '../ui/components';
import { chainLabel, loadChains } from './chains';
import { changedFields, EMPTY, newWebhook, valuesOf, withEntriesNamed, type Values } from './webhook-form-values';

/** The API's field names that have a control here to show their message beside; any other goes in the notice below the form. */
const FIELDS_SHOWN = new Set(['name', 'description', 'url', 'chainId', 'eventType', 'metadata', 'metadata.addresses', 'includeInternalTxs', 'includeLogs', 'metadata.eventSignatures']);

export function CreateWebhookPage() {
  return <WebhookForm />;
}

export function EditWebhookPage({ id }: { id: string }) {
  const webhook = useLoad((signal) => answer(api.GET('/v1/webhooks/{id}', { params: { path: { id } }, signal })), [id]);
  if (!webhook.data) {
    return (
      <>
        <PageHeader title="Edit webhook" />
        <ErrorNotice error={webhook.error} title="The webhook could not be loaded" />
        {!webhook.error && <Loading what="Loading the webhook" />}
      </>
    );
  }
  return <WebhookForm key={webhook.data.id} webhook={webhook.data} />;
}

/** Create (no `webhook`) or edit: the API's 400 messages go beside the fields they name. */
function WebhookForm({ webhook }: { webhook?: Webhook }) {
  const { route } = useLocation();
  const [values, setValues] = useState<Values>(() => (webhook ? valuesOf(webhook) : EMPTY));
  const [fields, setFields] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<unknown>();
  const [unchanged, setUnchanged] = useState(false);
  const [busy, setBusy] = useState(false);
  const form = useRef<HTMLFormElement>(null);
  const chains = useLoad(loadChains, []);

  useEffect(() => {
    if (!webhook && !values.chainId && chains.data?.[0]) setValues((current) => ({ ...current, chainId: chains.data![0]!.chainId }));
  }, [chains.data]);
  // After a refusal, the first field it names gets the focus, its message read with it: in the same
  // frame as the messages appear (a layout effect), so nothing reads or types into the field left.
  useLayoutEffect(() => {
    if (Object.keys(fields).length) form.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [fields]);

  const set = <K extends keyof Values>(key: K, value: Values[K]) => setValues((current) => ({ ...current, [key]: value }));

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setFailure(undefined);
    setFields({});
    setUnchanged(false);
    try {
      if (webhook) {
        const changes = changedFields(webhook, values);
        if (!changes) {
          setUnchanged(true);
          return;
        }
        try {
          await answer(api.PATCH('/v1/webhooks/{id}', { params: { path: { id: webhook.id } }, body: changes }));
        } catch (error) {
          throw withEntriesNamed(error, { eventSignatures: changes.metadata?.eventSignatures });
        }
        route(paths.webhook(webhook.id));
      } else {
        const body = newWebhook(values);
        try {
          const created = await answer(api.POST('/v1/webhooks', { body }));
          route(paths.webhook(created.id));
        } catch (error) {
          throw withEntriesNamed(error, body.metadata);
        }
      }
    } catch (error) {
      const { fields: named, other } = fieldMessages(error);
      const shown: Record<string, string> = {};
      for (const [field, message] of Object.entries(named)) {
        if (FIELDS_SHOWN.has(field)) shown[field] = message;
        else other.push(`${field}: ${message}`);
      }
      setFields(shown);
      setFailure(other.length ? new ApiFailure(error instanceof ApiFailure ? error.statusCode : 0, other.join('; '), error instanceof ApiFailure ? error.error : '') : undefined);
    } finally {
      setBusy(false);
    }
  };

  const fieldCount = Object.keys(fields).length;
  const addressCount = splitEntries(values.addresses).length;
  return (
    <>
      <PageHeader title={webhook ? `Edit ${webhookTitle(webhook)}` : 'Create a webhook'} />
      <form ref={form} class="webhook-form" onSubmit={submit} noValidate>
        <Field label="Name" error={fields.name} hint="Shown in the console and the webhook list; optional.">
          {({ id, describedBy, invalid }) => (
            <input id={id} value={values.name} onInput={(event) => set('name', event.currentTarget.value)} aria-describedby={describedBy} aria-invalid={invalid} />
          )}
        </Field>
        <Field label="Description" error={fields.description}>
          {({ id, describedBy, invalid }) => (
            <textarea id={id} class="short" value={values.description} onInput={(event) => set('description', event.currentTarget.value)} aria-describedby={describedBy} aria-invalid={invalid} />
          )}
        </Field>
        <Field label="URL" error={fields.url} hint={
            <>
              Where notifications are sent: an <code>https://</code> URL. On the local service (<code>npm start</code>) also a receiver on this machine, at{' '}
              <code>http://127.0.0.1:&lt;port&gt;/</code> or <code>http://localhost:&lt;port&gt;/</code>, as <code>npm run receiver</code> prints it.
            </>
          }>
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              type="url"
              inputMode="url"
              value={values.url}
              onInput={(event) => set('url', event.currentTarget.value)}
              aria-describedby={describedBy}
              aria-invalid={invalid}
              autoComplete="off"
              spellcheck={false}
              required
            />
          )}
        </Field>
        <ChainField webhook={webhook} chains={chains} value={values.chainId} error={fields.chainId} onChange={(chainId) => set('chainId', chainId)} />
        <Field label="Event type" error={fields.eventType} hint="Every transaction touching one of the webhook's addresses.">
          {({ id, describedBy }) => <input id={id} value="address_activity" readOnly aria-describedby={describedBy} class="mono" />}
        </Field>
        {!webhook && (
          <Field
            label="Addresses"
            error={fields['metadata.addresses'] ?? fields.metadata}
            hint={
              <>
                One per line, or separated by commas or spaces: up to {formatCount(ADDRESSES_PER_CALL)} here
                {addressCount ? ` (${formatCount(addressCount)} entered)` : ''}. Add many more from a file on the webhook's Addresses tab once it is
                created.
              </>
            }
          >
            {({ id, describedBy, invalid }) => (
              <textarea
                id={id}
                class="mono"
                value={values.addresses}
                onInput={(event) => set('addresses', event.currentTarget.value)}
                aria-describedby={describedBy}
                aria-invalid={invalid}
                spellcheck={false}
                required
              />
            )}
          </Field>
        )}
        <Checkbox label="Include internal transactions" error={fields.includeInternalTxs} checked={values.includeInternalTxs} onChange={(checked) => set('includeInternalTxs', checked)}>
          Notifications carry the transaction's internal calls, and an internal call touching an address makes it match.
        </Checkbox>
        <Checkbox label="Include logs" error={fields.includeLogs} checked={values.includeLogs} onChange={(checked) => set('includeLogs', checked)}>
          Notifications carry the transaction's logs.
        </Checkbox>
        <Field
          label="Event signatures"
          error={fields['metadata.eventSignatures']}
          hint="One per line, each 0x and 64 hexadecimal digits (a log's topic0): when any are given, only transactions with a log of one of them match. Empty: no such filter."
        >
          {({ id, describedBy, invalid }) => (
            <textarea
              id={id}
              class="mono short"
              value={values.eventSignatures}
              onInput={(event) => set('eventSignatures', event.currentTarget.value)}
              aria-describedby={describedBy}
              aria-invalid={invalid}
              spellcheck={false}
            />
          )}
        </Field>
        {fieldCount > 0 && (
          <p class="notice notice-error" role="alert">
            The webhook was not {webhook ? 'saved' : 'created'}: {fieldCount === 1 ? 'one field needs' : `${fieldCount} fields need`} a change, as said beside {fieldCount === 1 ? 'it' : 'them'}.
          </p>
        )}
        <ErrorNotice error={failure} title={`The webhook was not ${webhook ? 'saved' : 'created'}`} />
        {unchanged && <Notice>Nothing changed: there is nothing to save.</Notice>}
        <div class="form-actions">
          <button type="submit" class="primary" disabled={busy}>
            {webhook ? 'Save changes' : 'Create webhook'}
          </button>
          <a class="button" href={webhook ? paths.webhook(webhook.id) : paths.webhooks}>
            Cancel
          </a>
          {busy && (
            <span role="status" class="muted">
              {webhook ? 'Saving…' : 'Creating…'}
            </span>
          )}
        </div>
      </form>
    </>
  );
}

function ChainField(props: { webhook?: Webhook; chains: Loaded<Chain[]>; value: string; error?: string; onChange: (chainId: string) => void }) {
  const { webhook, chains } = props;
  if (webhook) {
    return (
      <Field label="Chain" hint="A webhook's chain cannot change: create another webhook for another chain.">
        {({ id, describedBy }) => <input id={id} value={chainLabel(chains.data, webhook.chainId)} readOnly aria-describedby={describedBy} />}
      </Field>
    );
  }
  return (
    <Field label="Chain" error={props.error ?? (chains.error ? `The chains could not be loaded: ${chains.error instanceof Error ? chains.error.message : String(chains.error)}` : undefined)} hint="The chains this service follows.">
      {({ id, describedBy, invalid }) => (
        <select id={id} value={props.value} onChange={(event) => props.onChange(event.currentTarget.value)} aria-describedby={describedBy} aria-invalid={invalid} disabled={!chains.data} required>
          {!chains.data && <option value="">Loading chains…</option>}
          {chains.data?.map((chain) => (
            <option key={chain.chainId} value={chain.chainId}>
              {chainLabel(chains.data, chain.chainId)}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** A checkbox before its label, with its hint and the API's message read with it. */
function Checkbox({ label, error, checked, onChange, children }: { label: string; error?: string; checked: boolean; onChange: (checked: boolean) => void; children: string }) {
  const id = useId();
  return (
    <div class={`field checkbox${error ? ' field-invalid' : ''}`}>
      <input
        id={id}
        type="checkbox"
        checked={checked}
        onChange={(event) => onChange(event.currentTarget.checked)}
        aria-describedby={error ? `${id}-hint ${id}-error` : `${id}-hint`}
        aria-invalid={Boolean(error)}
      />{' '}
      <label for={id}>{label}</label>
      <p class="hint" id={`${id}-hint`}>
        {children}
      </p>
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}
