import cluster from 'node:cluster';
import path from 'node:path';
import type { RuntimeConfig } from '../../lib/config/runtime';
import { portInUse } from './embedded-dynamodb';
import { tokensPerGrant } from './shared-throttle';
import { StartupError } from './startup-error';
import { startedSignal, supervise, type ProcessExit, type ProcessMessage } from './supervisor';
import { TokenBucketThrottle } from './token-bucket';

/** A gateway process asks for tokens from this process's buckets (`tokens`), and is granted some (`granted`). */
export type TokenMessage =
  | { type: 'tokens'; id: number; bucketKey: string; most: number }
  | { type: 'granted'; id: number; taken: number; retryAfterSeconds: number };

/** What a gateway process is started with: where to listen, its share of the throttle, and the service's configuration. */
export type GatewayProcessMessage = ProcessMessage<{ port: number; host: string; tokensPerGrant: number; config: RuntimeConfig }, TokenMessage>;

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
  /** What every gateway process is configured with; its local throttle is held here. */
  config: RuntimeConfig;
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
  // Inherits this process's node flags (tsx, the heap limit); the configuration comes in the start message.
  cluster.setupPrimary({ exec: ENTRY, args: [] });
  const throttle = options.config.localThrottle;
  const buckets = new TokenBucketThrottle(throttle);
  const settings = { port: options.port, host: options.host, tokensPerGrant: tokensPerGrant(throttle), config: options.config };
  const workers = Array.from({ length: options.count }, () =>
    supervise<GatewayProcessMessage>(cluster.fork().process, { ask: 'message', timeoutMs: STOP_TIMEOUT_MS }),
  );
  for (const worker of workers) {
    worker.child.on('message', (message: GatewayProcessMessage) => {
      if (message.type === 'tokens') worker.send({ type: 'granted', id: message.id, ...buckets.takeUpTo(message.bucketKey, message.most) });
    });
  }
  const stopAll = () => Promise.all(workers.map((worker) => worker.close()));
  let port: number;
  try {
    const started = await Promise.all(
      workers.map((worker) =>
        worker.whenReady(
          startedSignal(worker, {
            settings,
            exitedBeforeReady: ({ code, signal }) => new StartupError(`a gateway process exited (${signal ?? `code ${code}`}) before it listened`),
            failure: (message) => (message.code === 'EADDRINUSE' ? portInUse(options.port, 'PORT') : new StartupError(message.reason)),
          }),
        ),
      ),
    );
    port = started[0]!.port!;
  } catch (error) {
    await stopAll();
    throw error;
  }
  return {
    pids: workers.map((worker) => worker.pid),
    port,
    unexpectedExit: Promise.race(workers.map((worker) => worker.unexpectedExit.then((exit) => ({ ...exit, pid: worker.pid })))),
    close: async () => {
      await stopAll();
    },
  };
}
