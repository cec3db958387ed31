import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { machineClockMs } from '../support/machine-clock';

/**
 * The delivery section's receivers, in a process of their own so that their CPU is charged to
 * neither side: a healthy one that answers 200 at once and reports each notification's
 * `webhook-id` and when its body had arrived (on the machine's clock), and a dead one that accepts
 * connections, reads what comes and never answers. Talks to the bench over the IPC channel.
 *
 * Under `/warm-then-hang/<n>/` the healthy one answers the first n requests to each path and then
 * hangs as the dead one does: a receiver known to answer fast that stops answering. With a count
 * as its argument, the process runs that many more of the healthy one, each on a loopback address
 * of its own (127.0.0.2, 127.0.0.3, ...): other origins, sites and addresses to the service.
 */
export type ReceiverMessage =
  | { type: 'listening'; healthyPort: number; deadPort: number; otherOrigins: Array<{ address: string; port: number }> }
  | { type: 'arrivals'; ids: string[]; times: number[] }
  | { type: 'cut'; sockets: number };

export type ReceiverCommand = { type: 'cut' };

const RESPONSE = '{"received":true}';
let ids: string[] = [];
let times: number[] = [];

// Once per event-loop turn: under load, one IPC message carries many arrivals.
function flush() {
  send({ type: 'arrivals', ids, times });
  ids = [];
  times = [];
}

function send(message: ReceiverMessage) {
  if (process.connected) process.send!(message);
}

const hung = new Set<Socket>();
const answeredByPath = new Map<string, number>();
const WARM_THEN_HANG = /^\/warm-then-hang\/(\d+)\//;

const answer = (request: IncomingMessage, response: ServerResponse) => {
  request.resume();
  const warm = WARM_THEN_HANG.exec(request.url ?? '');
  if (warm) {
    const answered = answeredByPath.get(request.url!) ?? 0;
    if (answered >= Number(warm[1])) {
      hung.add(request.socket);
      request.socket.once('close', () => hung.delete(request.socket));
      return;
    }
    answeredByPath.set(request.url!, answered + 1);
  }
  request.on('end', () => {
    if (ids.length === 0) setImmediate(flush);
    ids.push(String(request.headers['webhook-id']));
    times.push(machineClockMs());
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': RESPONSE.length }).end(RESPONSE);
  });
};
const healthyServer = () => {
  const server = createHttpServer(answer);
  // The senders keep sockets for up to 60 s; a server that closed idle ones after its default 5 s
  // would make one side or the other reconnect between phases.
  server.keepAliveTimeout = 65_000;
  return server;
};
const healthy = healthyServer();
const otherAddresses = Array.from({ length: Number(process.argv[2] ?? 0) }, (_, index) => `127.0.0.${index + 2}`);

const dead = createTcpServer((socket) => {
  hung.add(socket);
  socket.on('data', () => undefined);
  socket.on('error', () => undefined);
  socket.on('close', () => hung.delete(socket));
});

process.on('message', (command: ReceiverCommand) => {
  if (command.type !== 'cut') return;
  // The bench stops a phase: the attempts waiting on the dead receiver end now rather than at their timeout.
  const sockets = hung.size;
  for (const socket of hung) socket.destroy();
  send({ type: 'cut', sockets });
});
process.on('disconnect', () => process.exit(0));

const listen = (server: Server, address = '127.0.0.1') => new Promise<number>((resolve) => server.listen(0, address, () => resolve((server.address() as AddressInfo).port)));
void Promise.all([listen(healthy), listen(dead), Promise.all(otherAddresses.map((address) => listen(healthyServer(), address)))]).then(([healthyPort, deadPort, ports]) =>
  send({ type: 'listening', healthyPort, deadPort, otherOrigins: otherAddresses.map((address, index) => ({ address, port: ports[index]! })) }),
);
