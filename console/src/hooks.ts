import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from './api/client';
import { formatInterval } from './format';

/** A load that has not answered by then is given up (and aborted), so that a slow API never leaves a page waiting for good. */
const LOAD_TIMEOUT_MS = 30_000;

export interface Loaded<T> {
  data: T | undefined;
  /** The last load's failure; data keeps the last good answer beside it. */
  error: unknown;
  loading: boolean;
  reload: () => Promise<void>;
}

/**
 * Loads `load()` when a dependency changes, and again `refreshMs` after each load ends while the page
 * is visible: one load at a time, however slow the API is. `load` gets a signal to pass to the API
 * call: a load is aborted when a newer one starts, when it takes longer than LOAD_TIMEOUT_MS, and when
 * the page is left. An answer that arrives after a newer load started is dropped.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, dependencies: unknown[], options: { refreshMs?: number } = {}): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  const running = useRef<AbortController | undefined>(undefined);
  const loadRef = useRef(load);
  loadRef.current = load;

  const reload = useCallback(async () => {
    const mine = ++generation.current;
    running.current?.abort();
    const controller = new AbortController();
    running.current = controller;
    const timer = setTimeout(() => controller.abort(), LOAD_TIMEOUT_MS);
    // Given up on abort even when the load does not pass the signal on.
    const givenUp = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
    setLoading(true);
    try {
      const value = await Promise.race([loadRef.current(controller.signal), givenUp]);
      if (mine !== generation.current) return;
      setData(value);
      setError(undefined);
    } catch (failure) {
      if (mine !== generation.current) return;
      setError(controller.signal.aborted ? new ApiFailure(0, `The service did not answer within ${formatInterval(LOAD_TIMEOUT_MS)}.`, 'Timeout') : failure);
    } finally {
      clearTimeout(timer);
      if (mine === generation.current) {
        running.current = undefined;
        setLoading(false);
      }
    }
  }, []);

  useEffect(() => {
    setData(undefined);
    void reload();
    return () => {
      generation.current += 1;
      running.current?.abort();
      running.current = undefined;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, dependencies);

  const { refreshMs } = options;
  useEffect(() => {
    if (!refreshMs) return;
    let timer: ReturnType<typeof setTimeout>;
    let stopped = false;
    // The next refresh is counted from the end of the last load, never stacked on one still running.
    const refresh = async () => {
      if (document.visibilityState === 'visible' && !running.current) await reload();
      if (!stopped) timer = setTimeout(() => void refresh(), refreshMs);
    };
    timer = setTimeout(() => void refresh(), refreshMs);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [refreshMs, reload]);

  return { data, error, loading, reload };
}

/** Runs an action once at a time, keeping its failure to show. */
export function useAction<A extends unknown[]>(action: (...args: A) => Promise<void>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = useCallback(
    async (...args: A) => {
      setBusy(true);
      setError(undefined);
      try {
        await action(...args);
      } catch (failure) {
        setError(failure);
      } finally {
        setBusy(false);
      }
    },
    [action],
  );
  return { run, busy, error, clearError: () => setError(undefined) };
}
