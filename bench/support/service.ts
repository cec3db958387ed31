import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createApiKey } from '../../lib/keys/api-keys';
import { generateOrRotateSharedSecret } from '../../lib/secrets/shared-secret';
import { childrenOf, startServerProcess } from '../../test/support/processes';
import { seedWebhooks } from './store';

/** BENCH_PROFILE_DIR=dir: each server under test writes a V8 CPU profile there when it stops. */
export const profileArgs = () => (process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : []);

export type BenchService = Awaited<ReturnType<typeof startBenchService>>;

/**
 * `npm start` on the bench store, with an account holding a secret and 20 webhooks, its key, the
 * pids of the API's processes (`npm start`'s own, which holds the throttle's buckets, and the
 * gateway's) and the pid of its background work's process.
 */
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
    DEV_CHAIN: 'off',
    // The webhooks created through the API are on 43114, which the service must follow to accept them:
    // its follower finds no node on this closed loopback port and waits up to 10 s between tries.
    CHAIN_RPC_URLS: '43114=http://127.0.0.1:9/',
    ...env,
  }, nodeArgs);
  // Found in /proc rather than in the "started" line, which the bench's log level leaves out.
  const [backgroundPid] = childrenOf(service.process.pid!, 'background-process-main');
  const apiPids = [service.process.pid!, ...childrenOf(service.process.pid!, 'gateway-process-main')];
  return { service, key, account, apiPids, backgroundPid };
}

