import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createLocalGateway } from '../../infra/local/gateway';
import { TokenBucketThrottle } from '../../infra/local/token-bucket';
import { stageSettings } from '../../lib/config/stages';
import { OPENAPI_DOCUMENT_PATH } from '../../lib/openapi/document';
import { useLocalService } from '../support/local-service';

// Only loopback; a few hundred sockets, each closed by the server or at the end.

const UNFINISHED_HEADERS = `GET ${OPENAPI_DOCUMENT_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `;

interface SlowClient {
  /** Everything the server sent before it closed the connection. */
  closed: Promise<string>;
}

/** A connection that sends the start of a request and never finishes its headers. */
function slowClient(port: number): SlowClient {
  const socket: Socket = connect(port, '127.0.0.1', () => socket.write(UNFINISHED_HEADERS));
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.on('error', () => undefined); // a dropped connection may be reset
  sockets.push(socket);
  return { closed: new Promise((resolve) => socket.once('close', () => resolve(received))) };
}

const sockets: Socket[] = [];
afterAll(() => {
  for (const socket of sockets) socket.destroy();
});

async function until(condition: () => boolean | Promise<boolean>, what: string) {
  const deadline = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`never: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the local gateway under a flood of unfinished requests', () => {
  const CAP = 100;
  const FLOOD = 300;
  let gateway: Server;
  let port: number;
  /** The connections the gateway holds, and the most it held at once. */
  let open = 0;
  let mostOpen = 0;
  let drops = 0;

  beforeAll(async () => {
    gateway = await createLocalGateway({
      routes: [],
      stage: stageSettings('local'),
      throttle: new TokenBucketThrottle({ rateLimit: 100, burstLimit: 200 }),
      authorizerCacheTtlSeconds: 0,
      bounds: { maxConnections: CAP, headersTimeoutSeconds: 2, requestTimeoutSeconds: 5, keepAliveTimeoutSeconds: 1 },
    });
    // After the gateway's own listener: a connection over the cap is already answered here.
    gateway.on('connection', (socket: Socket) => {
      if (socket.writableEnded) return void (drops += 1);
      mostOpen = Math.max(mostOpen, (open += 1));
      socket.once('close', () => (open -= 1));
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    port = (gateway.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => gateway.close(() => resolve())));

  it('holds at most its cap of connections, closes each unfinished one with a 408, then serves a normal request', async () => {
    const first = Array.from({ length: CAP }, () => slowClient(port));
    await until(() => open === CAP, `${CAP} connections open`);
    const rest = Array.from({ length: FLOOD - CAP }, () => slowClient(port));
    const answers = await Promise.all([...first, ...rest].map((client) => client.closed));

    expect(mostOpen).toBe(CAP);
    // Connections beyond the cap were answered 503 as they came and closed; every one let in was
    // closed once its headers were late. Both in the API's error shape.
    const refused = answers.filter((answer) => answer.startsWith('HTTP/1.1 503 '));
    const timedOut = answers.filter((answer) => answer.startsWith('HTTP/1.1 408 '));
    expect(refused.length).toBe(drops);
    expect(drops).toBeGreaterThan(0);
    expect(timedOut.length).toBe(FLOOD - drops);
    for (const answer of refused) {
      expect(answer).toContain('Retry-After: 1\r\n');
      expect(answer).toContain(`"message":"The gateway holds its limit of ${CAP} connections; retry after the time in the Retry-After header"`);
    }
    for (const answer of timedOut) expect(answer).toContain('"message":"The request was not received in time"');

    await until(() => open === 0, 'every connection closed on the gateway\'s side');
    const response = await fetch(`http://127.0.0.1:${port}${OPENAPI_DOCUMENT_PATH}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ openapi: expect.any(String) });
  });
});

describe('npm start’s gateway', () => {
  // Kept alive far longer than the test takes on any machine: the answered connection holds the slot.
  const client = useLocalService({ GATEWAY_MAX_CONNECTIONS: '1', GATEWAY_KEEP_ALIVE_TIMEOUT_SECONDS: '600' });

  it('takes its connection cap from GATEWAY_MAX_CONNECTIONS', async () => {
    const port = Number(new URL(client.url()).port);
    // A connection that was answered, and stays open (keep-alive), takes the one slot.
    const kept = connect(port, '127.0.0.1', () => kept.write(`GET ${OPENAPI_DOCUMENT_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
    sockets.push(kept);
    let received = '';
    kept.on('data', (chunk: Buffer) => (received += chunk.toString()));
    await until(() => received.startsWith('HTTP/1.1 200'), 'the first connection answered');
    expect(await slowClient(port).closed).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
  });
});
