import { spawnListening } from '../../test/support/processes';
import { load, type LoadResult } from '../support/load';
import { figure, median, type BenchOptions, type Figure } from '../support/report';
import { profileArgs, type BenchService } from '../support/service';

const SECTION = '2 latency';
const TARGET = 1.15;

const createBody = JSON.stringify({
  url: 'https://receiver.example.com/hooks',
  chainId: '43114',
  eventType: 'address_activity',
  metadata: { addresses: ['0x71c7656ec7ab88b098defb751b7401b5f6d8976f'] },
});

const ENDPOINTS = [
  { name: 'GET /v1/webhooks:getSharedSecret', service: '/v1/webhooks:getSharedSecret', baseline: '/secret', method: 'GET' as const },
  { name: 'GET /v1/webhooks?pageSize=10', service: '/v1/webhooks?pageSize=10', baseline: '/list', method: 'GET' as const },
  { name: 'POST /v1/webhooks', service: '/v1/webhooks', baseline: '/create', method: 'POST' as const, body: createBody },
];

/**
 * p50 and p99 through the local gateway against a bare node:http server doing one DynamoDB call on
 * the same store, run alternately so that both see the same machine.
 */
export async function latency(
  { quick, progress }: BenchOptions,
  storeEnv: Record<string, string>,
  { service, key, account }: BenchService,
): Promise<{ figures: Figure[]; requestsServed: number }> {
  let requestsServed = 0;
  const baseline = await spawnListening('bench/processes/baseline-server.ts', { ...storeEnv, BENCH_ACCOUNT: account }, /baseline listening on (\S+)/, profileArgs());
  const baselineUrl = baseline.match[1]!;
  // More, shorter rounds: the median round is steadier against this machine's drift than a few long ones.
  const duration = quick ? 1 : 2;
  const rounds = quick ? 1 : 4;
  const figures: Figure[] = [];
  try {
    for (const endpoint of ENDPOINTS) {
      for (const connections of [1, 32]) {
        const ours: LoadResult[] = [];
        const floor: LoadResult[] = [];
        const runOurs = (seconds = duration) =>
          loadCounted({ url: service.url + endpoint.service, method: endpoint.method, body: endpoint.body, headers: { 'x-service-api-key': key, 'content-type': 'application/json' }, connections, duration: seconds });
        const runFloor = (seconds = duration) =>
          load({ url: baselineUrl + endpoint.baseline, method: endpoint.method, body: endpoint.body, headers: { 'content-type': 'application/json' }, connections, duration: seconds });
        progress(`latency: ${endpoint.name} at concurrency ${connections}`);
        await runOurs(1); // warm-up: JIT, connections, authorizer cache
        await runFloor(1);
        for (let round = 0; round < rounds; round += 1) {
          // Alternate which goes first, so drift of the machine's speed hits both alike.
          if (round % 2) floor.push(await runFloor());
          ours.push(await runOurs());
          if (!(round % 2)) floor.push(await runFloor());
        }
        const failed = ours.reduce((sum, result) => sum + Object.entries(result.statusCounts).filter(([code]) => Number(code) >= 300).reduce((s, [, n]) => s + n, 0), 0);
        for (const percentile of ['p50', 'p99'] as const) {
          const oursValue = median(ours.map((result) => result[percentile]));
          const floorValue = median(floor.map((result) => result[percentile]));
          const ratio = oursValue / floorValue;
          figures.push(
            figure(
              SECTION,
              `${endpoint.name} c=${connections} ${percentile} ratio`,
              ratio,
              'x',
              { target: `<= ${TARGET}x`, pass: ratio <= TARGET && failed === 0 },
              `ours ${(oursValue / 1000).toFixed(2)} ms, baseline ${(floorValue / 1000).toFixed(2)} ms${failed ? `, ${failed} non-2xx` : ''}`,
            ),
          );
        }
      }
    }
  } finally {
    await baseline.stop();
  }
  return { figures, requestsServed };

  async function loadCounted(options: Parameters<typeof load>[0]) {
    const result = await load(options);
    requestsServed += result.requests;
    return result;
  }
}
