import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { machineClockMs } from '../support/machine-clock';

/**
 * The delivery section's receivers, in a process of their own so that their CPU is charged to
 * neither side: a healthy one that answers 200 at once and reports each notification's
 * `webhook-id` and when its body had arrived (on the machine's clock), and a dead one that accepts
 * connections, reads what comes and never answers. Talks to the bench over the IPC channel.
 */
export type ReceiverMessage =
  | { type: 'listening'; healthyPort: number; deadPort: number }
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

const healthy = createHttpServer((request, response) => {
  request.resume();
  request.on('end', () => {
    if (ids.length === 0) setImmediate(flush);
    ids.push(String(request.headers['webhook-id']));
    times.push(machineClockMs());
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': RESPONSE.length }).end(RESPONSE);
  });
});
// The senders keep sockets for up to 60 s; a server that closed idle ones after its default 5 s
// would make one side or the other reconnect between phases.
healthy.keepAliveTimeout = 65_000;

const hung = new Set<Socket>();
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

const listen = (server: Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
void Promise.all([listen(healthy), listen(dead)]).then(([healthyPort, deadPort]) => send({ type: 'listening', healthyPort, deadPort }));
