/**
 * The embedded DynamoDB server as a process of its own, started by dynamodb-process.ts over an IPC
 * channel (supervisor.ts's protocol): it says `ready`, starts on `start` with the options it is given,
 * reports `started` (with its port) or `failed`, stops on `stop` or SIGTERM, and stops by itself when
 * the channel closes, which is how it learns that its parent died, even by SIGKILL.
 */
import { dataDirectoryReadError, startEmbeddedDynamoDb, type EmbeddedDynamoDbOptions } from './embedded-dynamodb';
import type { DynamoDbProcessMessage } from './dynamodb-process';
import { StartupError } from './startup-error';
import { sendToParent } from './supervisor';

/** Far longer than any one request's writes take. */
const WRITES_UNDER_WAY_MS = 500;

const report = (message: DynamoDbProcessMessage) => sendToParent(message);

/** Tells the parent why the store cannot go on (in one line, when it is something the user can act on) and exits. */
async function fail(error: unknown): Promise<never> {
  const known = error instanceof StartupError;
  await report({ type: 'failed', reason: known ? error.message : String((error as Error).stack ?? error), known });
  process.exit(1);
}

async function start(options: EmbeddedDynamoDbOptions) {
  // dynalite throws a LevelDB error (a damaged table file) out of the request that met it.
  process.on('uncaughtException', (error) => void fail((options.directory && dataDirectoryReadError(options.directory, error)) || error));
  let store: Awaited<ReturnType<typeof startEmbeddedDynamoDb>>;
  try {
    store = await startEmbeddedDynamoDb(options);
  } catch (error) {
    return fail(error);
  }
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await store.close();
    process.exit(0);
  };
  process.on('message', (message: DynamoDbProcessMessage) => void (message.type === 'stop' && stop()));
  // The parent died: the requests it had under way are still being written (their sockets are gone,
  // so the server cannot tell when they are done). A moment for them, then the store closes.
  process.on('disconnect', () => setTimeout(() => void stop(), WRITES_UNDER_WAY_MS));
  process.on('SIGTERM', () => void stop());
  await report({ type: 'started', port: store.port, pid: process.pid });
}

// Ctrl-C in a terminal signals the whole process group: the parent decides when the store stops,
// after the requests under way have finished.
process.on('SIGINT', () => undefined);
let starting = false;
// Before `start` nothing is open: a parent gone, or one asking to stop, leaves nothing to close.
const exitUnlessStarting = () => {
  if (!starting) process.exit(0);
};
process.on('disconnect', exitUnlessStarting);
process.on('message', (message: DynamoDbProcessMessage) => {
  if (message.type === 'start' && !starting) {
    starting = true;
    void start(message.settings);
  } else if (message.type === 'stop') exitUnlessStarting();
});
void report({ type: 'ready' });
