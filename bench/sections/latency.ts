import { spawnListening, type ListeningProcess } from '../../test/support/processes';
import { load, type LoadOptions, type LoadResult } from '../support/load';
import { processCpuMicros, processesCpuMicros } from '../support/process-stats';
import { figure, median, type BenchOptions, type Figure } from '../support/report';
import { profileArgs, type BenchService } from '../support/service';

const SECTION = '2 latency';
const TARGET = 1.15;
/** One client; a few, which the service's processes (gateway, store) can serve in parallel; many, which saturate the machine. */
const SATURATING_CONCURRENCY = 32;
const CONCURRENCIES = [1, 8, SATURATING_CONCURRENCY];
/** A fresh process's first seconds are slower (its code not yet optimized); the baseline has served some 18 s of secret reads by then. */
const SECOND_BASELINE_WARM_UP_SECONDS = 3;

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
/** The same items as `/create` writes, in one batch instead of two in order: a figure with no target. */
const CREATE_IN_ONE_BATCH = '/create-one-batch';

/** A load run, with the CPU the server (ours: the API's processes), the store and (ours) the background work's process spent per request during it (Linux only). */
interface Run extends LoadResult {
  serverCpu?: number;
  storeCpu?: number;
  backgroundCpu?: number;
}

/**
 * p50 and p99 through the local gateway against a bare node:http server doing one DynamoDB call on
 * the same store, run alternately so that both see the same machine. Above concurrency 1 it also
 * reports the CPU each side's server and the store spend per request, which is what latency
 * becomes once the machine is saturated.
 */
export async function latency(
  { quick, progress }: BenchOptions,
  store: { env: Record<string, string>; pid: number },
  { service, key, account, apiPids, backgroundPid }: BenchService,
): Promise<{ figures: Figure[]; requestsServed: number }> {
  let requestsServed = 0;
  const startBaseline = () => spawnListening('bench/processes/baseline-server.ts', { ...store.env, BENCH_ACCOUNT: account }, /baseline listening on (\S+)/, profileArgs());
  const baseline = await startBaseline();
  const baselineUrl = baseline.match[1]!;
  // Many short rounds, each a pair of adjacent runs: the machine's speed drifts from second to
  // second, and a pair's ratio cancels what both runs saw alike.
  const duration = 1;
  const rounds = quick ? 1 : 8;
  const figures: Figure[] = [];

  async function measured(serverPids: number[], options: LoadOptions, ourBackgroundPid?: number): Promise<Run> {
    const server = processesCpuMicros(serverPids);
    const storeBefore = processCpuMicros(store.pid);
    const background = ourBackgroundPid === undefined ? undefined : processCpuMicros(ourBackgroundPid);
    const result = await load(options);
    const perRequest = (before: number | undefined, after: number | undefined) =>
      before === undefined || after === undefined ? undefined : (after - before) / result.requests;
    return {
      ...result,
      serverCpu: perRequest(server, processesCpuMicros(serverPids)),
      storeCpu: perRequest(storeBefore, processCpuMicros(store.pid)),
      backgroundCpu: ourBackgroundPid === undefined ? undefined : perRequest(background, processCpuMicros(ourBackgroundPid)),
    };
  }

  try {
    for (const endpoint of ENDPOINTS) {
      for (const connections of CONCURRENCIES) {
        const runOurs = async () => {
          const result = await measured(apiPids, { url: service.url + endpoint.service, method: endpoint.method, body: endpoint.body, headers: { 'x-service-api-key': key, 'content-type': 'application/json' }, connections, duration }, backgroundPid);
          requestsServed += result.requests;
          return result;
        };
        /** A run against a baseline process (at `serverUrl`), of this endpoint or of `path`. */
        const floorLoad = (serverUrl: string, path = endpoint.baseline): LoadOptions => ({ url: serverUrl + path, method: endpoint.method, body: endpoint.body, headers: { 'content-type': 'application/json' }, connections, duration });
        const runFloor = () => measured([baseline.process.pid!], floorLoad(baselineUrl));
        progress(`latency: ${endpoint.name} at concurrency ${connections}`);
        const { ours, floor } = await pairedRounds(runOurs, runFloor, rounds);
        const failed = ours.reduce((sum, result) => sum + Object.entries(result.statusCounts).filter(([code]) => Number(code) >= 300).reduce((s, [, n]) => s + n, 0), 0);
        for (const percentile of ['p50', 'p99'] as const) {
          const ratio = median(ours.map((result, round) => result[percentile] / floor[round]![percentile]));
          const oursValue = median(ours.map((result) => result[percentile]));
          const floorValue = median(floor.map((result) => result[percentile]));
          figures.push(
            figure(
              SECTION,
              `${endpoint.name} c=${connections} ${percentile} ratio`,
              ratio,
              'x',
              { target: `<= ${TARGET}x`, pass: ratio <= TARGET && failed === 0 },
              `median of ${rounds} paired rounds; ours ${(oursValue / 1000).toFixed(2)} ms, baseline ${(floorValue / 1000).toFixed(2)} ms${failed ? `, ${failed} non-2xx` : ''}`,
            ),
          );
        }
        if (endpoint.method === 'POST' && connections === 1) {
          progress(`latency: ${endpoint.name} at concurrency 1, against a baseline writing its items in one batch`);
          const oneBatch = await pairedRounds(runOurs, () => measured([baseline.process.pid!], floorLoad(baselineUrl, CREATE_IN_ONE_BATCH)), rounds);
          const ratio = median(oneBatch.ours.map((result, round) => result.p50 / oneBatch.floor[round]!.p50));
          figures.push(figure(SECTION, `${endpoint.name} c=1 p50 ratio, baseline writing in one batch`, ratio, 'x', undefined, 'no target: one batch lets a head land before its watcher'));
        }
        if (endpoint === ENDPOINTS[0] && connections === 8) {
          // A second process, not the same one twice: two processes running the same code differ
          // by a few per cent (bench/README.md), and the figures above compare two processes.
          progress(`latency: ${endpoint.name} at concurrency 8, a second baseline process against the baseline`);
          const second = await startBaseline();
          try {
            await load({ ...floorLoad(second.match[1]!), duration: SECOND_BASELINE_WARM_UP_SECONDS });
            const same = await pairedRounds(() => measured([second.process.pid!], floorLoad(second.match[1]!)), runFloor, rounds);
            const ratio = median(same.ours.map((result, round) => result.p50 / same.floor[round]!.p50));
            figures.push(figure(SECTION, `${endpoint.name} c=8 p50 ratio, a second baseline process against the baseline`, ratio, 'x', undefined, 'no target: how far from 1 this estimator strays with no difference to find'));
          } finally {
            await second.stop();
          }
        }
        if (connections > 1) {
          figures.push(...cpuFigure(endpoint.name, connections, ours, floor));
          if (endpoint.method === 'POST' && connections === SATURATING_CONCURRENCY) figures.push(...(await budgetFigure(endpoint, floor, baseline, { rounds, connections, measured, floorLoad, progress })));
        }
      }
    }
  } finally {
    await baseline.stop();
  }
  return { figures, requestsServed };
}

/** A warm-up of each, then rounds of two adjacent runs, the order flipping each round so that drift within a pair hits both alike. */
async function pairedRounds(runOurs: () => Promise<Run>, runFloor: () => Promise<Run>, rounds: number) {
  const ours: Run[] = [];
  const floor: Run[] = [];
  await runOurs(); // warm-up: JIT, connections, authorizer cache
  await runFloor();
  for (let round = 0; round < rounds; round += 1) {
    if (round % 2) floor.push(await runFloor());
    ours.push(await runOurs());
    if (!(round % 2)) floor.push(await runFloor());
  }
  return { ours, floor };
}

/**
 * What the target allows once the machine is saturated, in CPU: the baseline made to busy-wait 15 %
 * of its own CPU per request and doing nothing else differently, against itself. Its ratio shows
 * how much extra work per request 1.15x leaves on this machine (no target: a yardstick).
 */
async function budgetFigure(
  endpoint: (typeof ENDPOINTS)[number],
  floorRuns: Run[],
  baseline: ListeningProcess,
  run: {
    rounds: number;
    connections: number;
    measured: (pids: number[], options: LoadOptions) => Promise<Run>;
    floorLoad: (serverUrl: string, path?: string) => LoadOptions;
    progress: BenchOptions['progress'];
  },
): Promise<Figure[]> {
  const floorCpu = medianCpu(floorRuns, 'serverCpu');
  if (floorCpu === undefined) return [];
  run.progress(`latency: ${endpoint.name} at concurrency ${run.connections}, the baseline against itself with 15 % more CPU`);
  const busyMicros = Math.round(floorCpu * (TARGET - 1));
  const runWith = (query: string) => () =>
    run.measured([baseline.process.pid!], run.floorLoad(baseline.match[1]!, endpoint.baseline + query));
  const { ours: busy, floor } = await pairedRounds(runWith(`?busyMicros=${busyMicros}`), runWith(''), run.rounds);
  const ratio = median(busy.map((result, round) => result.p50 / floor[round]!.p50));
  const cpu = (runs: Run[]) => micros(medianCpu(runs, 'serverCpu') ?? NaN);
  return [
    figure(
      SECTION,
      `${endpoint.name} c=${run.connections} p50 ratio, baseline + ${busyMicros} µs busy`,
      ratio,
      'x',
      undefined,
      `yardstick: the baseline made to spend 15 % more CPU a request (${cpu(busy)} against ${cpu(floor)})`,
    ),
  ];
}

/** The median CPU per request one side's runs spent; undefined where /proc cannot tell (not Linux). */
function medianCpu(runs: Run[], side: 'serverCpu' | 'storeCpu' | 'backgroundCpu'): number | undefined {
  const values = runs.map((run) => run[side]).filter((value): value is number => value !== undefined);
  return values.length === runs.length ? median(values) : undefined;
}

const micros = (value: number) => `${value.toFixed(0)} µs`;

/**
 * Server + store CPU per request (ours with its background work's process), ours against the
 * baseline's: the ratio latency follows once the machine is saturated (c=32). At c=8 the server
 * process is the busiest, and latency follows its own ratio, given in the detail.
 */
function cpuFigure(name: string, connections: number, ours: Run[], floor: Run[]): Figure[] {
  const [oursServer, oursBackground, oursStore, floorServer, floorStore] = [
    medianCpu(ours, 'serverCpu'),
    medianCpu(ours, 'backgroundCpu'),
    medianCpu(ours, 'storeCpu'),
    medianCpu(floor, 'serverCpu'),
    medianCpu(floor, 'storeCpu'),
  ];
  if ([oursServer, oursBackground, oursStore, floorServer, floorStore].includes(undefined)) return [];
  return [
    figure(
      SECTION,
      `${name} c=${connections} CPU per request, server + store`,
      (oursServer! + oursBackground! + oursStore!) / (floorServer! + floorStore!),
      'x',
      undefined,
      `ours ${micros(oursServer!)} + background ${micros(oursBackground!)} + store ${micros(oursStore!)}, baseline ${micros(floorServer!)} + store ${micros(floorStore!)}; servers alone ${(oursServer! / floorServer!).toFixed(2)}x`,
    ),
  ];
}
