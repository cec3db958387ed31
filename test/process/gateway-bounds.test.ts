import { connect } from 'node:net';
import path from 'node:path';
import { startServerProcess, type RunningServer } from '../support/processes';
import { useTempDir } from '../support/temp-dir';

const dataDirs = useTempDir('webhooks-gateway-bounds-');

let server: RunningServer | undefined;
afterAll(async () => {
  await server?.stop('SIGTERM');
});

/** A connection that sends the start of a request and never finishes its headers; what it was answered. */
function unfinishedRequest(url: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write('GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '));
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    socket.on('error', () => undefined);
    socket.once('close', () => resolve(received));
  });
}

it("npm start's gateway processes each hold at most GATEWAY_MAX_CONNECTIONS, and close unfinished requests with a 408", async () => {
  const processes = 2;
  const cap = 3;
  server = await startServerProcess({
    DATA_DIR: path.join(dataDirs(), 'data'),
    DEV_CHAIN: 'off',
    GATEWAY_PROCESSES: String(processes),
    GATEWAY_MAX_CONNECTIONS: String(cap),
    GATEWAY_HEADERS_TIMEOUT_SECONDS: '2',
    GATEWAY_REQUEST_TIMEOUT_SECONDS: '4',
  });
  const answers = await Promise.all(Array.from({ length: 20 }, () => unfinishedRequest(server!.url)));
  const statuses = answers.map((answer) => /^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
  // Each process let in at most its cap, and closed each of those once its headers were late.
  expect(statuses.filter((status) => status === '408').length).toBeLessThanOrEqual(processes * cap);
  expect(statuses.filter((status) => status === '503').length).toBeGreaterThanOrEqual(20 - processes * cap);
  expect(statuses.every((status) => status === '408' || status === '503')).toBe(true);

  // Once the gateway's side of those connections has closed, a request is served again.
  const deadline = Date.now() + 20_000;
  let status: number;
  do {
    status = (await fetch(`${server.url}/openapi.json`)).status;
  } while (status === 503 && Date.now() < deadline);
  expect(status).toBe(200);
}, 60_000);
