/**
 * One of `npm start`'s gateway processes, forked by gateway-processes.ts (node:cluster), speaking
 * supervisor.ts's protocol: on `start` it installs the configuration it is given and serves the API on the socket all of them share, drawing on
 * the first process's token buckets; it stops on `stop` or SIGTERM once the requests under way have finished, and exits at once when
 * the channel closes, which is how it learns that its parent died.
 */
import './node-version-warning';
import type { Server } from 'node:http';
import { useRuntimeConfig } from '../../lib/config/runtime';
import { routeList } from '../../lib/routes';
import { createLocalGateway } from './gateway';
import type { GatewayProcessMessage } from './gateway-processes';
import { SharedThrottle } from './shared-throttle';

const send = (message: GatewayProcessMessage) => {
  if (process.connected) process.send!(message);
};

const grants = new Map<number, (grant: { taken: number; retryAfterSeconds: number }) => void>();
let nextGrantId = 0;
let gateway: Server | undefined;
let stopping = false;

async function start({ port, host, tokensPerGrant, config }: Extract<GatewayProcessMessage, { type: 'start' }>['settings']) {
  useRuntimeConfig(config);
  const throttle = new SharedThrottle(
    (bucketKey, most) =>
      new Promise((resolve) => {
        const id = (nextGrantId += 1);
        grants.set(id, resolve);
        send({ type: 'tokens', id, bucketKey, most });
      }),
    tokensPerGrant,
  );
  gateway = await createLocalGateway({
    routes: routeList,
    stage: config.stage,
    throttle,
    authorizerCacheTtlSeconds: config.authorizerCacheTtlSeconds,
    bounds: config.localGatewayBounds,
  });
  gateway.once('error', (error: NodeJS.ErrnoException) => send({ type: 'failed', reason: error.message, known: true, code: error.code }));
  gateway.listen(port, host, () => send({ type: 'started', pid: process.pid, port: (gateway!.address() as { port: number }).port }));
}

async function stop() {
  if (stopping) return;
  stopping = true;
  await new Promise<void>((resolve) => {
    if (!gateway?.listening) return resolve();
    gateway.close(() => resolve());
    gateway.closeIdleConnections();
  });
  process.exit(0);
}

// Ctrl-C in a terminal signals the whole process group: the first process decides when this stops.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => void stop());
process.on('message', (message: GatewayProcessMessage) => {
  if (message.type === 'granted') {
    grants.get(message.id)?.(message);
    grants.delete(message.id);
  } else if (message.type === 'start' && !gateway) {
    start(message.settings).catch((error: Error) => send({ type: 'failed', reason: error.message, known: true }));
  } else if (message.type === 'stop') void stop();
});
send({ type: 'ready' });
