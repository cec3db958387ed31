import { fork } from 'node:child_process';
import path from 'node:path';
import type { ChainSettings } from '../../lib/config/chains';
import type { RuntimeConfig } from '../../lib/config/runtime';
import { startedSignal, supervise, type ProcessExit, type ProcessMessage } from './supervisor';

/** The chains to follow, with their RPC URLs, and the service's configuration. */
export type BackgroundProcessMessage = ProcessMessage<{ chains: ChainSettings[]; config: RuntimeConfig }>;

export interface BackgroundProcess {
  pid: number;
  /** Settles when the process exits without having been asked to stop: it crashed or was killed. */
  unexpectedExit: Promise<ProcessExit>;
  /** Asks it to stop (the attempts under way finish) and waits for it to exit; SIGKILL after `STOP_TIMEOUT_MS`. */
  close(): Promise<void>;
}

const ENTRY = path.join(__dirname, 'background-process-main.ts');
/** Longer than a delivery attempt's timeout, which the attempts under way are given to finish. */
const STOP_TIMEOUT_MS = 30_000;

/**
 * The background work (background-work.ts) in a child process, as its functions are apart from the
 * API's on AWS: a burst of deliveries or a large block never holds up an API response, and the API's
 * process runs only the API's code.
 * The gateway's processes queue messages (retry, recover, test) at the child's queue endpoint (the configuration's deliveryQueueUrl).
 * It runs in `npm start`'s process group, and exits at once when its parent is gone: an attempt it
 * cuts off is claimed again after its claim runs out, as after any crash.
 */
export async function startBackgroundProcess(chains: ChainSettings[], config: RuntimeConfig): Promise<BackgroundProcess> {
  // Inherits this process's node flags (tsx, the heap limit); the configuration comes in the start message.
  const background = supervise<BackgroundProcessMessage>(fork(ENTRY, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }), {
    ask: 'message',
    timeoutMs: STOP_TIMEOUT_MS,
  });
  const started = await background.whenReady(
    startedSignal(background, {
      settings: { chains, config },
      exitedBeforeReady: ({ code, signal }) => new Error(`the background process exited (${signal ?? `code ${code}`}) before it started`),
    }),
  );
  return { pid: started.pid, unexpectedExit: background.unexpectedExit, close: background.close };
}
