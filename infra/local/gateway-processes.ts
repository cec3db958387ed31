import cluster, { type Worker } from 'node:cluster';
import path from 'node:path';
import type { UsagePlanSettings } from '../../lib/config/stages';
import { stopChildProcess } from './child-process';
import type { ProcessExit } from './dynamodb-process';
import { portInUse } from './embedded-dynamodb';
import { tokensPerGrant } from './shared-throttle';
import { StartupError } from './startup-error';
import { TokenBucketThrottle } from './token-bucket';

export type GatewayProcessMessage =
  | { type: 'ready' }
  | { type: 'start'; port: number; host: string; tokensPerGrant: number }
  | { type: 'listening'; port: number }
  | { type: 'failed'; reason: string; code?: string }
  | { type: 'tokens'; id: number; bucketKey: string; most: number }
  | { type: 'granted'; id: number; taken: number; retryAfterSeconds: number }
  | { type: 'stop' };

export interface GatewayProcesses {
  pids: number[];
  port: number;
  /** Settles when one of them exits without having been asked to stop. */
  unexpectedExit: Promise<ProcessExit & { pid: number }>;
  /** Stops taking connections, lets the requests under way finish, and waits for every process to exit. */
  close(): Promise<void>;
}

export interface GatewayProcessesOptions {
  count: number;
  port: number;
  host: string;
  throttle: Pick<UsagePlanSettings, 'rateLimit' | 'burstLimit'>;
}

const ENTRY = path.join(__dirname, 'gateway-process-main.ts');
/** Longer than a request may take (the stage's Lambda timeout). */
const STOP_TIMEOUT_MS = 30_000;

/**
 * The local API Gateway in `count` processes sharing one listening socket (node:cluster), so that the
 * API uses more than one core, as API Gateway and Lambda do on AWS. This process holds the usage
 * plan's token buckets, which the gateway processes draw on in grants (shared-throttle.ts). Each gateway process keeps its own authorizer cache, like
 * API Gateway's nodes: a revoked key is refused by all of them within the cache's lifetime.
 */
export async function startGatewayProcesses(options: GatewayProcessesOptions): Promise<GatewayProcesses> {
  // Inherits this process's node flags (tsx, the heap limit) and environment (the store's endpoint, the page-token key).
  cluster.setupPrimary({ exec: ENTRY, args: [] });
  const buckets = new TokenBucketThrottle(options.throttle);
  let stopRequested = false;
  const workers = Array.from({ length: options.count }, () => cluster.fork());
  const exits = workers.map((worker) => new Promise<ProcessExit & { pid: number }>((resolve) => worker.once('exit', (code, signal) => resolve({ code, signal: signal as NodeJS.Signals | null, pid: worker.process.pid! }))));
  const send = (worker: Worker, message: GatewayProcessMessage) => {
    if (worker.isConnected()) worker.send(message);
  };
  const stopAll = () =>
    Promise.all(workers.map((worker, index) => stopChildProcess(worker.process, exits[index]!, () => send(worker, { type: 'stop' }), STOP_TIMEOUT_MS)));

  const listening = workers.map(
    (worker, index) =>
      new Promise<number>((resolve, reject) => {
        void exits[index]!.then(({ code, signal }) => reject(new StartupError(`a gateway process exited (${signal ?? `code ${code}`}) before it listened`)));
        worker.on('message', (message: GatewayProcessMessage) => {
          if (message.type === 'tokens') {
            send(worker, { type: 'granted', id: message.id, ...buckets.takeUpTo(message.bucketKey, message.most) });
          }
          // A message sent before the worker listens for them is lost (its module loads asynchronously, under tsx).
          else if (message.type === 'ready') send(worker, { type: 'start', port: options.port, host: options.host, tokensPerGrant: tokensPerGrant(options.throttle) });
          else if (message.type === 'listening') resolve(message.port);
          else if (message.type === 'failed') reject(message.code === 'EADDRINUSE' ? portInUse(options.port, 'PORT') : new StartupError(message.reason));
        });
      }),
  );
  let port: number;
  try {
    [port] = (await Promise.all(listening)) as [number];
  } catch (error) {
    stopRequested = true;
    await stopAll();
    throw error;
  }
  return {
    pids: workers.map((worker) => worker.process.pid!),
    port,
    unexpectedExit: Promise.race(exits).then((exit) => (stopRequested ? new Promise<never>(() => undefined) : exit)),
    close: async () => {
      stopRequested = true;
      await stopAll();
    },
  };
}
