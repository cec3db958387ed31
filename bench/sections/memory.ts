import type { AddressInfo } from 'node:net';
import { createLocalGateway } from '../../infra/local/gateway';
import { TokenBucketThrottle } from '../../infra/local/token-bucket';
import { runtimeConfig } from '../../lib/config/runtime';
import { stageSettings } from '../../lib/config/stages';
import { createApiKey } from '../../lib/keys/api-keys';
import { routeList } from '../../lib/routes';
import { load } from '../support/load';
import { peakRssKiB } from '../support/process-stats';
import { figure, type BenchOptions, type Figure } from '../support/report';
import type { BenchService } from '../support/service';

const SECTION = '4 memory';

/** Half secret reads, half list pages: the read operations a busy caller repeats. */
async function drive({ service, key }: BenchService, requests: number) {
  const amount = Math.ceil(requests / 2);
  for (const path of ['/v1/webhooks:getSharedSecret', '/v1/webhooks?pageSize=10']) {
    // autocannon refuses more connections than requests; a top-up may be a handful.
    await load({ url: service.url + path, headers: { 'x-service-api-key': key }, connections: Math.min(32, amount), amount });
  }
}

/**
 * Peak RSS of `npm start`'s API processes (its own and the gateway's, summed) after its first 1 000
 * requests and after 100 000 (quick: 10 000). The
 * server is the one the latency section measures: `before` runs on the fresh process, the latency
 * runs count towards the total, and `after` tops up the rest.
 */
export function peakRss({ quick, progress }: BenchOptions, bench: BenchService) {
  const total = quick ? 10_000 : 100_000;
  const checkpoints: { requests: number; kib: number }[] = [];
  const record = async (requests: number) => {
    const peaks = await Promise.all(bench.apiPids.map((pid) => peakRssKiB(pid)));
    checkpoints.push({ requests, kib: peaks.reduce((sum, kib) => sum + kib, 0) });
  };
  return {
    before: async () => {
      progress('memory: the first 1 000 requests');
      await drive(bench, 1000);
      await record(1000);
    },
    after: async (served: number): Promise<Figure[]> => {
      // Checkpoints: after the first 1 000, after the latency runs if they ran, and after the total
      // if the latency runs did not already serve it.
      if (served > 1000) await record(served);
      if (served < total) {
        progress(`memory: ${total - served} more requests, to ${total}`);
        await drive(bench, total - served);
        await record(total);
      }
      const mib = (kib: number) => Math.round(kib / 1024);
      const growth = (from: (typeof checkpoints)[number], to: (typeof checkpoints)[number]) => {
        const ratio = to.kib / from.kib - 1;
        return figure(SECTION, `peak RSS growth, ${from.requests} -> ${to.requests} requests`, Math.round(ratio * 1000) / 10, '%', { target: '<= 10%', pass: ratio <= 0.1 });
      };
      const [first, ...later] = checkpoints;
      return [
        ...checkpoints.map((point) => figure(SECTION, `peak RSS after ${point.requests} requests`, mib(point.kib), 'MiB')),
        growth(first!, later.at(-1)!),
        // The plateau: from the end of the latency runs to the total.
        ...(later.length > 1 ? [growth(later[0]!, later[1]!)] : []),
      ];
    },
  };
}

/** The local gateway in this process: heap before and after it has seen `count` new keys once each. */
export async function heapPerKey({ quick, progress }: BenchOptions): Promise<Figure[]> {
  const count = quick ? 500 : 2000;
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run the bench with node --expose-gc (npm run bench does)');
  progress(`memory: creating ${count + 200} keys for the heap-per-key figure`);
  const keys: string[] = [];
  for (let index = 0; index < count + 200; index += 50) {
    keys.push(...(await Promise.all(Array.from({ length: 50 }, async (_, offset) => (await createApiKey(`bench-heap-${index + offset}`)).key))));
  }
  const gateway = await createLocalGateway({ routes: routeList, stage: stageSettings('local'), throttle: new TokenBucketThrottle({ rateLimit: 100, burstLimit: 200 }), authorizerCacheTtlSeconds: 300, bounds: runtimeConfig().localGatewayBounds });
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
    return [figure(SECTION, 'heap per caller key (authorizer cache entry + throttle bucket)', Math.round((after - before) / count), 'bytes', undefined, `${count} keys`)];
  } finally {
    gateway.closeAllConnections();
    await new Promise((resolve) => gateway.close(resolve));
  }
}
