import { fork } from 'node:child_process';
import path from 'node:path';
import { stopChildProcess } from './child-process';
import type { EmbeddedDynamoDbOptions } from './embedded-dynamodb';
import { StartupError } from './startup-error';

export type DynamoDbProcessMessage =
  | { type: 'listening'; port: number; pid: number }
  | { type: 'failed'; reason: string; known: boolean }
  | { type: 'stop' };

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

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
export function startDynamoDbProcess(options: EmbeddedDynamoDbOptions): Promise<DynamoDbProcess> {
  const child = fork(ENTRY, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, EMBEDDED_DYNAMODB_OPTIONS: JSON.stringify(options) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    detached: true,
  });
  let stopRequested = false;
  let failure: { reason: string; known: boolean } | undefined;
  const exited = new Promise<ProcessExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    void exited.then(({ code, signal }) =>
      reject(new Error(`the embedded DynamoDB process exited (${signal ?? `code ${code}`}) before it was listening`)),
    );
    child.once('error', reject);
    child.on('message', (message: DynamoDbProcessMessage) => {
      if (message.type === 'failed') {
        failure = message;
        reject(message.known ? new StartupError(message.reason) : new Error(message.reason));
      }
      if (message.type !== 'listening') return;
      resolve({
        port: message.port,
        endpoint: `http://127.0.0.1:${message.port}`,
        pid: message.pid,
        unexpectedExit: exited.then((exit) => (stopRequested ? new Promise<never>(() => undefined) : { ...exit, reason: failure?.reason })),
        failure: () => (failure?.known ? new StartupError(failure.reason) : undefined),
        close: async () => {
          stopRequested = true;
          await stopChildProcess(child, exited, () => child.send({ type: 'stop' } satisfies DynamoDbProcessMessage), STOP_TIMEOUT_MS);
        },
      });
    });
  });
}
