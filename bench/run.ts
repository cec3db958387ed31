import '../infra/local/node-version-warning';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { localLogger } from '../infra/local/local-logger';
import { encodeFollowedChains, FOLLOWED_CHAINS_VARIABLE, publicFactsOf } from '../lib/config/chains';
import { stageSettings } from '../lib/config/stages';
import { logger } from '../lib/logger';
import { addresses } from './sections/addresses';
import { BACKFILL_BENCH_CHAIN_IDS, backfill } from './sections/backfill';
import { BENCH_CHAIN_IDS, chains } from './sections/chains';
import { coldStart } from './sections/cold-start';
import { consoleFigures } from './sections/console';
import { cost } from './sections/cost';
import { delivery } from './sections/delivery';
import { FULL_BLOCKS_BENCH_CHAIN_IDS, fullBlocks } from './sections/full-blocks';
import { keys } from './sections/keys';
import { latency } from './sections/latency';
import { listCost } from './sections/list-cost';
import { noisyNeighbour } from './sections/noisy';
import { heapPerKey, peakRss } from './sections/memory';
import { throttling } from './sections/throttling';
import { formatTable, type BenchOptions, type Figure } from './support/report';
import { startBenchService } from './support/service';
import { installDynamoDbCounter, instrumentDynamoDb, startBenchStore } from './support/store';

/**
 * `npm run bench [-- --quick] [--json] [--only=list,latency,memory,cold,throttle,delivery,noisy,cost,chains,backfill,keys,console,fullblocks,addresses] [--out=file]`:
 * what the service costs, each timing a ratio against a baseline measured side by side in the same
 * run. Progress goes to stderr; the table (or JSON) to stdout; the figures also to bench/results.json.
 */
async function main(argv: string[]) {
  // The in-process gateway (heap-per-key figure) would otherwise log every request here.
  for (const instance of [logger, localLogger]) instance.setLogLevel('WARN');
  const quick = argv.includes('--quick');
  const json = argv.includes('--json');
  const only = argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length).split(',');
  const out = argv.find((arg) => arg.startsWith('--out='))?.slice('--out='.length) ?? path.join(__dirname, 'results.json');
  const started = performance.now();
  const options: BenchOptions = {
    quick,
    progress: (message) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(3)}s] ${message}\n`),
  };
  const wanted = (section: string) => !only || only.includes(section);
  // Webhooks are refused on a chain the service does not follow: this process follows the stage's and the chain sections'.
  process.env[FOLLOWED_CHAINS_VARIABLE] = encodeFollowedChains([...stageSettings('local').followedChains, ...Object.values(BENCH_CHAIN_IDS), ...Object.values(BACKFILL_BENCH_CHAIN_IDS), ...Object.values(FULL_BLOCKS_BENCH_CHAIN_IDS)].map(publicFactsOf));
  // The addresses section's full run puts some 6 million items in the in-memory store: about 7 GiB.
  const store = await startBenchStore(wanted('addresses') ? { maxOldSpaceMiB: 12_288 } : {});
  installDynamoDbCounter(); // before this process's first DynamoDB call: see its comment
  const figures: Figure[] = [];
  try {
    if (wanted('list')) figures.push(...(await listCost(options)));
    if (wanted('latency') || wanted('memory')) {
      // One fresh `npm start` serves the latency runs and the memory figures: its peak RSS is taken
      // after its first 1 000 requests, and again once the latency runs and a top-up reach the total.
      const bench = await startBenchService(store.env);
      try {
        const memory = peakRss(options, bench);
        if (wanted('memory')) await memory.before();
        const served = wanted('latency') ? await latency(options, store, bench) : { figures: [], requestsServed: 0 };
        figures.push(...served.figures);
        if (wanted('memory')) figures.push(...(await memory.after(1000 + served.requestsServed)));
      } finally {
        await bench.service.stop();
      }
      if (wanted('memory')) figures.push(...(await heapPerKey(options)));
    }
    if (wanted('cold')) figures.push(...(await coldStart(options, store.env)));
    if (wanted('throttle')) figures.push(...(await throttling(options, store.env)));
    if (wanted('delivery')) figures.push(...(await delivery(options, store)));
    if (wanted('noisy')) figures.push(...(await noisyNeighbour(options, store)));
    if (wanted('cost')) figures.push(...(await cost(options)));
    if (wanted('chains')) figures.push(...(await chains(options, instrumentDynamoDb())));
    if (wanted('backfill')) figures.push(...(await backfill(options)));
    if (wanted('keys')) figures.push(...(await keys(options)));
    if (wanted('console')) figures.push(...(await consoleFigures(options, store.env)));
    // After every section that runs a delivery loop: it leaves notifications recorded and not delivered, and 2 million items.
    if (wanted('fullblocks')) figures.push(...(await fullBlocks(options)));
    // Last: it leaves the store holding millions of items, which the sections above should not meet.
    if (wanted('addresses')) figures.push(...(await addresses(options, store)));
  } finally {
    await store.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  const summary = {
    date: new Date().toISOString(),
    mode: quick ? 'quick' : 'full',
    seconds: Math.round(seconds),
    node: process.version,
    passed: figures.filter((f) => f.pass === true).length,
    missed: figures.filter((f) => f.pass === false).length,
    figures,
  };
  await writeFile(out, `${JSON.stringify(summary, null, 2)}\n`);
  if (json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else {
    process.stdout.write(`${formatTable(figures)}\n\n`);
    process.stdout.write(`${summary.passed} targets met, ${summary.missed} missed in ${summary.seconds} s (${summary.mode}); figures in ${path.relative(process.cwd(), out)}\n`);
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${(error as Error).stack}\n`);
    process.exit(1);
  },
);
