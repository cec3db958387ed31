import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { ApiFailure } from '../api/client';
import type { Loaded } from '../hooks';

/** The page's heading, focused when the page opens so that a screen reader announces where the user is. */
export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Webhooks console`;
    heading.current?.focus({ preventScroll: false });
  }, [title]);
  return (
    <div class="page-header">
      <h1 tabIndex={-1} ref={heading}>
        {title}
      </h1>
      {children && <div class="page-actions">{children}</div>}
    </div>
  );
}

/** A failure's message as the API worded it. */
export function messageOf(error: unknown): string {
  if (error instanceof ApiFailure) return error.statusCode ? `${error.message} (${error.statusCode} ${error.error})` : error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}

export function ErrorNotice({ error, title = 'Something went wrong' }: { error: unknown; title?: string }) {
  if (!error) return null;
  return (
    <div class="notice notice-error" role="alert">
      <strong>{title}:</strong> {messageOf(error)}
    </div>
  );
}

export function Notice({ children, tone = 'info' }: { children: ComponentChildren; tone?: 'info' | 'success' | 'warning' }) {
  return (
    <div class={`notice notice-${tone}`} role="status">
      {children}
    </div>
  );
}

/**
 * What stands in for content until its first answer: marked aria-busy, which the browser tests and the
 * bench wait on (never the word "Loading", which data may hold).
 */
export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <div aria-busy="true">
      <p class="muted" role="status">
        {what}…
      </p>
    </div>
  );
}

/** The failure of a load, the loading line until its first answer, then its content (kept while a reload fails). */
export function Loads<T>({ loaded, errorTitle, loadingText, children }: { loaded: Loaded<T>; errorTitle: string; loadingText: string; children: (data: T) => ComponentChildren }) {
  return (
    <>
      <ErrorNotice error={loaded.error} title={errorTitle} />
      {loaded.data === undefined ? !loaded.error && <Loading what={loadingText} /> : children(loaded.data)}
    </>
  );
}

interface FieldProps {
  label: string;
  error?: string;
  hint?: ComponentChildren;
  children: (ids: { id: string; describedBy: string | undefined; invalid: boolean }) => JSX.Element;
}

/** A labelled control with its hint and, from the API's 400, its error, both read out with it. */
export function Field({ label, error, hint, children }: FieldProps) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  const errorId = error ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ') || undefined;
  return (
    <div class={`field${error ? ' field-invalid' : ''}`}>
      <label for={id}>{label}</label>
      {children({ id, describedBy, invalid: Boolean(error) })}
      {hint && (
        <p class="hint" id={hintId}>
          {hint}
        </p>
      )}
      {error && (
        <p class="field-error" id={errorId}>
          {error}
        </p>
      )}
    </div>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status}`}>{status}</span>;
}

/** Previous/next over the API's page tokens: the tokens seen so far make "previous" possible. */
export function usePages() {
  const [tokens, setTokens] = useState<(string | undefined)[]>([undefined]);
  const current = tokens[tokens.length - 1];
  return {
    pageToken: current,
    pageNumber: tokens.length,
    next: (token: string) => setTokens((seen) => [...seen, token]),
    previous: () => setTokens((seen) => (seen.length > 1 ? seen.slice(0, -1) : seen)),
    reset: () => setTokens([undefined]),
    /** Shows page 1 afresh: goes back to it from another page (its load follows), or reloads it. */
    showFirstPage: (reload: () => Promise<void>) => {
      if (tokens.length === 1) return reload();
      setTokens([undefined]);
      return Promise.resolve();
    },
  };
}

export function Pager({ pages, nextPageToken, label }: { pages: ReturnType<typeof usePages>; nextPageToken: string | undefined; label: string }) {
  if (pages.pageNumber === 1 && !nextPageToken) return null;
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" onClick={pages.previous} disabled={pages.pageNumber === 1}>
        Previous page
      </button>
      <span>Page {pages.pageNumber}</span>
      <button type="button" onClick={() => nextPageToken && pages.next(nextPageToken)} disabled={!nextPageToken}>
        Next page
      </button>
    </nav>
  );
}

/** Copies text to the clipboard, and says so where a screen reader hears it. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      setState('failed');
    }
  };
  return (
    <span class="copy">
      <button type="button" onClick={copy}>
        {label}
      </button>
      <span role="status" class="muted">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed: select the text and copy it' : ''}
      </span>
    </span>
  );
}

/**
 * A modal that asks for an action to be confirmed; with `typed`, the user must type that text first
 * (deleting for good). Escape or Cancel closes it; focus returns where it was.
 */
export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  typed?: string;
  busy?: boolean;
  error?: unknown;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState('');
  const titleId = useId();
  const inputId = useId();
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (props.open && !element.open) {
      setTyped('');
      element.showModal();
    } else if (!props.open && element.open) element.close();
  }, [props.open]);
  const allowed = props.typed === undefined || typed === props.typed;
  return (
    <dialog ref={dialog} aria-labelledby={titleId} onCancel={(event) => (event.preventDefault(), props.onCancel())}>
      <form
        method="dialog"
        onSubmit={(event) => {
          event.preventDefault();
          if (allowed && !props.busy) props.onConfirm();
        }}
      >
        <h2 id={titleId}>{props.title}</h2>
        <div>{props.children}</div>
        {props.typed !== undefined && (
          <div class="field">
            <label for={inputId}>
              Type <code>{props.typed}</code> to confirm
            </label>
            <input id={inputId} value={typed} onInput={(event) => setTyped(event.currentTarget.value)} autoComplete="off" spellcheck={false} />
          </div>
        )}
        <ErrorNotice error={props.error} />
        <div class="dialog-actions">
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
          <button type="submit" class={props.danger ? 'danger' : 'primary'} disabled={!allowed || props.busy}>
            {props.busy ? 'Working…' : props.confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}

/** A list's "Status" filter: All, or one of `statuses`; a change starts the list at its first page. */
export function StatusFilter<S extends string>({ statuses, value, onChange, class: className }: { statuses: readonly S[]; value: S | ''; onChange: (value: S | '') => void; class?: string }) {
  const id = useId();
  return (
    <div class={className ? `field ${className}` : 'field'}>
      <label for={id}>Status</label>
      <select id={id} value={value} onChange={(event) => onChange(event.currentTarget.value as S | '')}>
        <option value="">All</option>
        {statuses.map((status) => (
          <option key={status} value={status}>
            {status}
          </option>
        ))}
      </select>
    </div>
  );
}
