import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { createApiKey } from '../../lib/keys/api-keys';
import { routeList } from '../../lib/routes';
import { createLocalGateway } from '../../infra/local/gateway';
import { load } from '../support/load';
import { figure, type BenchOptions, type Figure } from '../support/report';
import { startBenchService } from './latency';

const SECTION = '4 memory';

/** Peak RSS (VmHWM) of a process, in KiB, from the kernel's accounting. */
async function peakRssKiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1]);
}

/**
 * Peak RSS of `npm start` after 1 000 requests and after 100 000 (quick: 10 000), and the heap the
 * local gateway keeps per caller key (authorizer cache entry and throttle bucket).
 */
export async function memory({ quick, progress }: BenchOptions, storeEnv: Record<string, string>): Promise<Figure[]> {
  const { service, key } = await startBenchService(storeEnv);
  const total = quick ? 10_000 : 100_000;
  const drive = (amount: number, path: string) =>
    load({ url: service.url + path, headers: { 'x-service-api-key': key }, connections: 16, amount });
  let after1k: number;
  let afterAll: number;
  try {
    progress('memory: 1 000 requests');
    await drive(500, '/v1/webhooks:getSharedSecret');
    await drive(500, '/v1/webhooks?pageSize=10');
    after1k = await peakRssKiB(service.process.pid!);
    progress(`memory: ${total} requests`);
    await drive((total - 1000) / 2, '/v1/webhooks:getSharedSecret');
    await drive((total - 1000) / 2, '/v1/webhooks?pageSize=10');
    afterAll = await peakRssKiB(service.process.pid!);
  } finally {
    await service.stop();
  }
  const growth = afterAll / after1k - 1;
  const figures = [
    figure(SECTION, 'peak RSS after 1 000 requests', Math.round(after1k / 1024), 'MiB'),
    figure(SECTION, `peak RSS after ${total} requests`, Math.round(afterAll / 1024), 'MiB'),
    figure(SECTION, `peak RSS growth, 1 000 -> ${total} requests`, Math.round(growth * 1000) / 10, '%', { target: '<= 10%', pass: growth <= 0.1 }),
  ];
  figures.push(figure(SECTION, 'heap per caller key (authorizer cache + throttle bucket)', await heapPerKey(quick ? 500 : 5000, progress), 'bytes'));
  return figures;
}

/** The local gateway in this process: heap before and after it has seen `count` new keys once each. */
async function heapPerKey(count: number, progress: (message: string) => void): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run the bench with node --expose-gc (npm run bench does)');
  progress(`memory: creating ${count + 200} keys for the heap-per-key figure`);
  const keys: string[] = [];
  for (let index = 0; index < count + 200; index += 50) {
    keys.push(...(await Promise.all(Array.from({ length: 50 }, async (_, offset) => (await createApiKey(`bench-heap-${index + offset}`)).key))));
  }
  const gateway = await createLocalGateway({ routes: routeList, stage: 'local', throttle: { rateLimit: 100, burstLimit: 200 }, authorizerCacheTtlSeconds: 300 });
  await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}/v1/webhooks:getSharedSecret`;
  const visit = async (batch: string[]) => {
    for (let index = 0; index < batch.length; index += 20) {
      await Promise.all(batch.slice(index, index + 20).map((key) => fetch(url, { headers: { 'x-service-api-key': key } }).then((response) => response.arrayBuffer())));
    }
  };
  try {
    await visit(keys.slice(0, 200)); // warm-up: code paths, connections, JIT
    gc();
    const before = process.memoryUsage().heapUsed;
    await visit(keys.slice(200));
    gc();
    const after = process.memoryUsage().heapUsed;
    return Math.round((after - before) / count);
  } finally {
    gateway.closeAllConnections();
    await new Promise((resolve) => gateway.close(resolve));
  }
}
