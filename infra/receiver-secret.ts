/** The receiver CLI's shared secret: read from --secret-file, or fetched from the service with an API key. */
import { API_KEY_HEADER } from '../lib/keys/authorize';
import { routes } from '../lib/routes';
import { sharedSecret } from '../lib/schemas/shared-secret';

/** A failure to run that is not the arguments' fault (the service, the port): exit 1. */
export class ReceiverError extends Error {}

/**
 * After a fetch of the secret that brought nothing new, how long signatures that do not hold (which
 * anyone can send) are not a reason to fetch it again.
 */
export const REFETCH_PAUSE_MS = 5_000;

/** The receiver's options that say where its secret comes from. */
export interface SecretOptions {
  secret?: string;
  key?: string;
  api: string;
}

/**
 * The secret to verify with: the one given, or the account's, fetched with the key. An account gets
 * its secret with its first notification, so a missing one is fetched again when notifications come;
 * a rotated one is fetched again when a signature stops holding. A fetch that brings nothing new
 * pauses fetching for REFETCH_PAUSE_MS: notifications are anyone's to send, the service's rate limit
 * is the account's.
 */
export function secretSource(options: SecretOptions) {
  let secret = options.secret;
  let fetching: Promise<string | undefined> | undefined;
  let pausedUntil = 0;
  const fetchOnce = () => {
    fetching ??= fetchSharedSecret(options.api, options.key!).finally(() => (fetching = undefined));
    return fetching;
  };
  /** Fetches the secret again unless paused; true when it changed (it was generated or rotated). */
  const fetchedAnew = async (): Promise<boolean> => {
    if (options.key === undefined || Date.now() < pausedUntil) return false;
    const fetched = await fetchOnce();
    const changed = fetched !== undefined && fetched !== secret;
    if (!changed) pausedUntil = Date.now() + REFETCH_PAUSE_MS;
    secret = fetched ?? secret;
    return changed;
  };
  return {
    /** The secret as first fetched, at start-up. */
    async initial(): Promise<string | undefined> {
      if (secret === undefined && options.key !== undefined) secret = await fetchOnce();
      return secret;
    },
    async get(): Promise<string | undefined> {
      if (secret === undefined) await fetchedAnew();
      return secret;
    },
    refetched: fetchedAnew,
  };
}

/** The account's shared secret, or undefined when it has none yet (404). */
async function fetchSharedSecret(api: string, key: string): Promise<string | undefined> {
  const url = `${api.replace(/\/+$/, '')}${routes.getSharedSecret.path}`;
  let response: Response;
  try {
    response = await fetch(url, { headers: { [API_KEY_HEADER]: key }, signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new ReceiverError(`cannot reach the service at ${api} to fetch the shared secret (${cause?.code ?? cause?.message ?? (error as Error).message}); is npm start running there?`);
  }
  if (response.status === 404) return undefined;
  if (response.status === 401) throw new ReceiverError(`the service at ${api} refused the API key (401): is it a key of this service's account?`);
  if (!response.ok) throw new ReceiverError(`the service at ${api} answered ${response.status} to ${routes.getSharedSecret.path}`);
  const { secret } = sharedSecret.parse(await response.json());
  return secret;
}
