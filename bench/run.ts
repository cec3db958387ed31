import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { localLogger } from '../infra/local/local-logger';
import { logger } from '../lib/logger';
import { coldStart } from './sections/cold-start';
import { latency } from './sections/latency';
import { listCost } from './sections/list-cost';
import { memory } from './sections/memory';
import { throttling } from './sections/throttling';
import { formatTable, type BenchOptions, type Figure } from './support/report';
import { startBenchStore } from './support/store';

/**
 * `npm run bench [-- --quick] [-- --json]`: what the service costs, each timing a ratio against a
 * baseline measured side by side in the same run. Progress goes to stderr; the table (or JSON) to
 * stdout; the figures are also written to bench/results.json.
 */
async function main(argv: string[]) {
  // The in-process gateway (heap-per-key figure) would otherwise log every request here.
  for (const instance of [logger, localLogger]) instance.setLogLevel('WARN');
  const quick = argv.includes('--quick');
  const json = argv.includes('--json');
  const only = argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length).split(',');
  const started = performance.now();
  const options: BenchOptions = {
    quick,
    progress: (message) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(3)}s] ${message}\n`),
  };
  const wanted = (section: string) => !only || only.includes(section);
  const store = await startBenchStore();
  const figures: Figure[] = [];
  try {
    if (wanted('list')) figures.push(...(await listCost(options)));
    if (wanted('latency')) figures.push(...(await latency(options, store.env)));
    if (wanted('memory')) figures.push(...(await memory(options, store.env)));
    if (wanted('cold')) figures.push(...(await coldStart(options, store.env)));
    if (wanted('throttle')) figures.push(...(await throttling(options, store.env)));
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
  await writeFile(path.join(__dirname, 'results.json'), `${JSON.stringify(summary, null, 2)}\n`);
  if (json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else {
    process.stdout.write(`${formatTable(figures)}\n\n`);
    process.stdout.write(`${summary.passed} passed, ${summary.missed} missed targets in ${summary.seconds} s (${summary.mode}); figures in bench/results.json\n`);
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${(error as Error).stack}\n`);
    process.exit(1);
  },
);
