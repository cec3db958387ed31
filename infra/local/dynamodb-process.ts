import { fork } from 'node:child_process';
import path from 'node:path';
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

export interface DynamoDbProcess {
  port: number;
  endpoint: string;
  pid: number;
  /** Settles when the process exits without having been asked to stop: it crashed or was killed. */
  unexpectedExit: Promise<ProcessExit>;
  /** Asks it to stop (it flushes the store) and waits for it to exit; SIGKILL after `STOP_TIMEOUT_MS`. */
  close(): Promise<void>;
}

const ENTRY = path.join(__dirname, 'dynamodb-process-main.ts');
const STOP_TIMEOUT_MS = 15_000;

/**
 * The embedded DynamoDB server in a child process, so that the store and the API each have a core
 * (in one process they shared one, and the API's latency at concurrency 8 was 1.4 times a bare
 * server's). The child exits when this process does, however this one ends.
 */
export function startDynamoDbProcess(options: EmbeddedDynamoDbOptions): Promise<DynamoDbProcess> {
  const child = fork(ENTRY, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, EMBEDDED_DYNAMODB_OPTIONS: JSON.stringify(options) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let stopRequested = false;
  const exited = new Promise<ProcessExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    void exited.then(({ code, signal }) =>
      reject(new Error(`the embedded DynamoDB process exited (${signal ?? `code ${code}`}) before it was listening`)),
    );
    child.once('error', reject);
    child.on('message', (message: DynamoDbProcessMessage) => {
      if (message.type === 'failed') reject(message.known ? new StartupError(message.reason) : new Error(message.reason));
      if (message.type !== 'listening') return;
      resolve({
        port: message.port,
        endpoint: `http://127.0.0.1:${message.port}`,
        pid: message.pid,
        unexpectedExit: exited.then((exit) => (stopRequested ? new Promise<never>(() => undefined) : exit)),
        close: async () => {
          stopRequested = true;
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.send({ type: 'stop' } satisfies DynamoDbProcessMessage);
          const timeout = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
          await exited;
          clearTimeout(timeout);
        },
      });
    });
  });
}
