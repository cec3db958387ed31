import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { answer, api, API_KEY_HEADER } from '../api/client';
import { ErrorNotice } from '../ui/components';
import { session } from '../session';

/**
 * Sign-in: the key is checked with one call before it is kept (in sessionStorage only). A key the
 * API refuses brings its message here.
 */
export function SignIn({ because }: { because?: string }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const inputId = useId();
  const hintId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = 'Sign in · Webhooks console';
    heading.current?.focus();
  }, []);

  const signIn = async (event: Event) => {
    event.preventDefault();
    const candidate = key.trim();
    if (!candidate) {
      setError(new Error('Enter an API key.'));
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await answer(api.GET('/v1/webhooks', { params: { query: { pageSize: 1 } }, headers: { [API_KEY_HEADER]: candidate } }));
      session.signIn(candidate);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" class="sign-in">
      <h1 tabIndex={-1} ref={heading}>
        Webhooks console
      </h1>
      {because && !error && <ErrorNotice title="Signed out" error={new Error(because)} />}
      <form method="post" onSubmit={signIn} autoComplete="off">
        <div class="field">
          <label for={inputId}>API key</label>
          <input
            id={inputId}
            type="password"
            name="api-key"
            value={key}
            onInput={(event) => setKey(event.currentTarget.value)}
            aria-describedby={hintId}
            aria-invalid={error ? true : undefined}
            autoComplete="off"
            spellcheck={false}
            required
          />
          <p class="hint" id={hintId}>
            The key starts with <code>whk_</code>. On its first start <code>npm start</code> makes one for the account <code>dev</code>: it prints it, or
            writes it to <code>.data/dev-api-key</code> when its output is not a terminal. <code>npm run keys -- create --account dev</code> makes another.
            The key is kept in this tab only, until you sign out or close it.
          </p>
        </div>
        <ErrorNotice title="Not signed in" error={error} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
