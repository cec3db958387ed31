import { useEffect, useState } from 'preact/hooks';

/**
 * The API key lives in sessionStorage only: it is gone when the tab closes, never in a URL, a cookie
 * or localStorage, and signing out forgets it.
 */
const STORAGE_KEY = 'webhooks-console.api-key';

type Listener = () => void;
const listeners = new Set<Listener>();
/** Why the user is back at sign-in: the API's message for a key it refused. */
let signedOutBecause: string | undefined;

function changed() {
  for (const listener of listeners) listener();
}

export const session = {
  key(): string | undefined {
    return sessionStorage.getItem(STORAGE_KEY) ?? undefined;
  },
  signIn(key: string) {
    sessionStorage.setItem(STORAGE_KEY, key);
    signedOutBecause = undefined;
    changed();
  },
  signOut(because?: string) {
    sessionStorage.removeItem(STORAGE_KEY);
    signedOutBecause = because;
    changed();
  },
  signedOutBecause(): string | undefined {
    return signedOutBecause;
  },
};

/** Re-renders the caller when the user signs in or out. */
export function useSession(): { key: string | undefined; signedOutBecause: string | undefined } {
  const [, setVersion] = useState(0);
  useEffect(() => {
    const listener = () => setVersion((version) => version + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return { key: session.key(), signedOutBecause };
}
