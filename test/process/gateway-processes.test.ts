import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { requestLog } from '../../infra/local/local-logger';
import { logLines, startServerProcess, type RunningServer } from '../support/processes';
import { rawExchange } from '../support/raw-http';
import { useTempDir } from '../support/temp-dir';

const dataDirs = useTempDir('webhooks-gateway-processes-');

let server: RunningServer | undefined;
let dataDir: string;
/** The lines of the request log npm start writes under its DATA_DIR. */
const requestLogLines = () => logLines(readFileSync(requestLog.fileOf(dataDir), 'utf8'));
afterAll(async () => {
  await server?.stop('SIGTERM');
});

/** A GET on a connection of its own (no keep-alive pool): the gateway processes take connections in turn. */
function getOnNewConnection(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { headers, agent: false }, (response) => {
      response.resume();
      response.once('end', () => resolve(response.statusCode!));
    });
    sent.once('error', reject);
    sent.end();
  });
}

describe('npm start with two gateway processes', () => {
  it('serves from both, and throttles a key in one bucket across them', async () => {
    dataDir = path.join(dataDirs(), 'data');
    // A burst of 3 and almost no refill: per-process buckets would let 6 through.
    server = await startServerProcess({ DATA_DIR: dataDir, GATEWAY_PROCESSES: '2', THROTTLE_BURST_LIMIT: '3', THROTTLE_RATE_LIMIT: '0.001' });
    const headers = { 'x-service-api-key': readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim() };
    const gateways = logLines(server.output()).find((line) => line.message === 'started')!.gatewayPids as number[];
    expect(gateways).toHaveLength(2);

    const statuses: number[] = [];
    for (let index = 0; index < 8; index += 1) statuses.push(await getOnNewConnection(`${server.url}/v1/webhooks:getSharedSecret`, headers));
    expect(statuses.filter((status) => status !== 429)).toHaveLength(3);
    expect(statuses.slice(3)).toEqual(Array(5).fill(429));

    await new Promise((resolve) => setTimeout(resolve, 200)); // the last request lines
    const servedBy = new Set(requestLogLines().filter((line) => line.message === 'request').map((line) => line.pid));
    expect(servedBy).toEqual(new Set(gateways));
  });

  it("logs a request Node's HTTP parser refuses, with the id its answer carries", async () => {
    const answer = await rawExchange(server!.url, 'NOT A REQUEST\r\n\r\n');
    const requestId = /^x-request-id: (\S+)$/im.exec(answer)?.[1];
    expect(requestId).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 200)); // the line
    expect(requestLogLines().filter((line) => line.requestId === requestId)).toEqual([
      expect.objectContaining({ message: 'request', status: 400, parseError: expect.stringMatching(/^HPE_/) }),
    ]);
  });
});
