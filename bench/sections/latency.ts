import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createApiKey } from '../../lib/keys/api-keys';
import { generateOrRotateSharedSecret } from '../../lib/secrets/shared-secret';
import { spawnListening, startServerProcess } from '../../test/support/processes';
import { load, type LoadResult } from '../support/load';
import { figure, median, type BenchOptions, type Figure } from '../support/report';
import { seedWebhooks } from '../support/store';

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

/** BENCH_PROFILE_DIR=dir: each server under test writes a V8 CPU profile there when it stops. */
export const profileArgs = () => (process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : []);

/** `npm start` on the bench store, with an account holding a secret and 20 webhooks, and its key. */
export async function startBenchService(storeEnv: Record<string, string>, env: Record<string, string> = {}, nodeArgs = profileArgs()) {
  const account = `bench-${Math.random().toString(36).slice(2, 8)}`;
  const { key } = await createApiKey(account);
  await generateOrRotateSharedSecret(account);
  await seedWebhooks(account, 20, () => 'active');
  const service = await startServerProcess({
    ...storeEnv,
    DATA_DIR: await mkdtemp(path.join(tmpdir(), 'bench-data-')),
    THROTTLE_RATE_LIMIT: '1000000',
    THROTTLE_BURST_LIMIT: '1000000',
    ...env,
  }, nodeArgs);
  return { service, key, account };
}

/**
 * p50 and p99 through the local gateway against a bare node:http server doing one DynamoDB call on
 * the same store, run alternately so that both see the same machine.
 */
export async function latency({ quick, progress }: BenchOptions, storeEnv: Record<string, string>): Promise<Figure[]> {
  const { service, key, account } = await startBenchService(storeEnv);
  const baseline = await spawnListening('bench/processes/baseline-server.ts', { ...storeEnv, BENCH_ACCOUNT: account }, /baseline listening on (\S+)/, profileArgs());
  const baselineUrl = baseline.match[1]!;
  const duration = quick ? 1 : 3;
  const rounds = quick ? 1 : 3;
  const figures: Figure[] = [];
  try {
    for (const endpoint of ENDPOINTS) {
      for (const connections of [1, 32]) {
        const ours: LoadResult[] = [];
        const floor: LoadResult[] = [];
        const runOurs = () =>
          load({ url: service.url + endpoint.service, method: endpoint.method, body: endpoint.body, headers: { 'x-service-api-key': key, 'content-type': 'application/json' }, connections, duration });
        const runFloor = () =>
          load({ url: baselineUrl + endpoint.baseline, method: endpoint.method, body: endpoint.body, headers: { 'content-type': 'application/json' }, connections, duration });
        progress(`latency: ${endpoint.name} at concurrency ${connections}`);
        await runOurs(); // warm-up: JIT, connections, authorizer cache
        await runFloor();
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
    await service.stop();
  }
  return figures;
}
