import { fork } from 'node:child_process';
import path from 'node:path';
import type { EmbeddedDynamoDbOptions } from './embedded-dynamodb';
import { StartupError } from './startup-error';
import { startedSignal, supervise, type FailedMessage, type ProcessExit, type ProcessMessage } from './supervisor';

/** The store's options come in its `start` message. */
export type DynamoDbProcessMessage = ProcessMessage<EmbeddedDynamoDbOptions>;

/** A store process's exit, with the reason it gave, if it gave one before exiting. */
export type StoreExit = ProcessExit & { reason?: string };

export interface DynamoDbProcess {
  port: number;
  endpoint: string;
  pid: number;
  /** Settles when the process exits without having been asked to stop: it crashed or was killed. */
  unexpectedExit: Promise<StoreExit>;
  /** Why it stopped, when it said and the user can act on it (a damaged data directory, say). */
  failure(): StartupError | undefined;
  /** Asks it to stop (it flushes the store) and waits for it to exit; SIGKILL after `STOP_TIMEOUT_MS`. */
  close(): Promise<void>;
}

const ENTRY = path.join(__dirname, 'dynamodb-process-main.ts');
const STOP_TIMEOUT_MS = 15_000;

/**
 * The embedded DynamoDB server in a child process, so that the store and the API each have a core:
 * in one process every store request would wait behind the API's work, and the API behind the
 * store's. The child exits when this process does, however this one ends.
 *
 * It runs in a process group of its own, so that a signal to `npm start`'s group (a SIGKILL of the
 * whole of it, say) does not cut it off in the middle of a write: dynalite writes an item and each
 * of its index entries as separate LevelDB writes, and a write cut off between them leaves an index
 * that disagrees with its table (a pending message missing from the due-time index, never sent). It
 * finishes the requests under way, closes the store and exits as soon as its parent is gone.
 */
export async function startDynamoDbProcess(options: EmbeddedDynamoDbOptions): Promise<DynamoDbProcess> {
  const store = supervise<DynamoDbProcessMessage>(
    fork(ENTRY, [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      detached: true,
    }),
    { ask: 'message', timeoutMs: STOP_TIMEOUT_MS },
  );
  let failure: FailedMessage | undefined;
  store.child.on('message', (message: DynamoDbProcessMessage) => {
    if (message.type === 'failed') failure = message;
  });
  const started = await store.whenReady(
    startedSignal(store, {
      settings: options,
      exitedBeforeReady: ({ code, signal }) => new Error(`the embedded DynamoDB process exited (${signal ?? `code ${code}`}) before it was listening`),
    }),
  );
  return {
    port: started.port!,
    endpoint: `http://127.0.0.1:${started.port}`,
    pid: started.pid,
    unexpectedExit: store.unexpectedExit.then((exit) => ({ ...exit, reason: failure?.reason })),
    failure: () => (failure?.known ? new StartupError(failure.reason) : undefined),
    close: store.close,
  };
}
