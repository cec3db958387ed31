import { spawn } from 'node:child_process';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';
import { LAMBDA_BUNDLING } from '../../infra/bundling';
import { routes } from '../../lib/routes';
import { figure, median, type BenchOptions, type Figure } from '../support/report';

const SECTION = '3 cold start';
const TARGET = 1.2;
/** Inside the project, so that a bundle with the SDK left external finds it in node_modules. */
const OUT = path.join(__dirname, '..', '.cold-start');

/** The floor: a handler that only imports the DynamoDB client and sends one request. */
const BASELINE_SOURCE = `
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
const client = new DynamoDBClient({ endpoint: process.env.DYNAMODB_ENDPOINT });
export const handler = async () => {
  await client.send(new GetItemCommand({ TableName: process.env.TABLE_NAME, Key: { pk: { S: 'x' }, sk: { S: 'y' } } }));
  return { statusCode: 200 };
};
`;

/** Loads a bundle in a fresh process, calls its handler once, prints the status. */
const RUNNER_SOURCE = `
const { handler } = require(process.argv[2]);
const event = JSON.parse(process.env.BENCH_EVENT);
handler(event, { awsRequestId: 'cold', functionName: 'bench', getRemainingTimeInMillis: () => 10000 }).then(
  (result) => process.stdout.write(String(result.statusCode)),
  (error) => { process.stderr.write(String(error)); process.exit(1); },
);
`;

async function bundle(name: string, entry: { file: string } | { source: string }, external: string[]): Promise<{ file: string; kib: number }> {
  const outfile = path.join(OUT, name, 'index.js');
  await build({
    ...('file' in entry ? { entryPoints: [entry.file] } : { stdin: { contents: entry.source, resolveDir: OUT, loader: 'ts' } }),
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: LAMBDA_BUNDLING.target,
    minify: LAMBDA_BUNDLING.minify,
    sourcemap: LAMBDA_BUNDLING.sourceMap,
    sourcesContent: LAMBDA_BUNDLING.sourcesContent,
    external,
    logLevel: 'silent',
  });
  return { file: outfile, kib: Math.round((await stat(outfile)).size / 1024) };
}

/** Wall time, in ms, from spawning `node` to the handler's first response. */
function timeFreshProcess(bundleFile: string, env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [path.join(OUT, 'runner.js'), bundleFile], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => {
      const elapsed = performance.now() - started;
      if (code === 0 && stdout === '200') resolve(elapsed);
      else reject(new Error(`cold-start run of ${bundleFile} failed (${code}): ${stdout} ${stderr}`));
    });
  });
}

/**
 * Cold start of the list handler's Lambda bundle (built as the CDK stack builds it) against a
 * bundle that only imports the DynamoDB client and sends one request, in fresh processes, run
 * alternately. Also the same with the SDK left external (loaded from node_modules, as from the
 * Lambda runtime), which is how the bundling choice was made.
 */
export async function coldStart({ quick, progress }: BenchOptions, storeEnv: Record<string, string>): Promise<Figure[]> {
  progress('cold start: bundling the list handler as the CDK stack does');
  await rm(OUT, { recursive: true, force: true });
  await mkdir(OUT, { recursive: true });
  await writeFile(path.join(OUT, 'runner.js'), RUNNER_SOURCE);
  const entry = { file: path.join(__dirname, '..', '..', routes.listWebhooks.entry) };
  const sdk = ['@aws-sdk/*'];
  const bundles = {
    list: await bundle('list', entry, LAMBDA_BUNDLING.externalModules),
    baseline: await bundle('baseline', { source: BASELINE_SOURCE }, LAMBDA_BUNDLING.externalModules),
    listSdkExternal: await bundle('list-sdk-external', entry, sdk),
    baselineSdkExternal: await bundle('baseline-sdk-external', { source: BASELINE_SOURCE }, sdk),
  };
  const env = {
    ...storeEnv,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    POWERTOOLS_LOG_LEVEL: 'WARN',
    BENCH_EVENT: JSON.stringify({
      resource: '/v1/webhooks',
      path: '/v1/webhooks',
      httpMethod: 'GET',
      headers: {},
      multiValueHeaders: {},
      queryStringParameters: { pageSize: '10' },
      multiValueQueryStringParameters: { pageSize: ['10'] },
      pathParameters: null,
      stageVariables: null,
      requestContext: { requestId: 'cold', authorizer: { accountId: 'bench-cold' } },
      body: null,
      isBase64Encoded: false,
    }),
  };
  const runs = quick ? 4 : 12;
  const variants = {
    list: { file: bundles.list.file, env },
    baseline: { file: bundles.baseline.file, env },
    listSdkExternal: { file: bundles.listSdkExternal.file, env },
    baselineSdkExternal: { file: bundles.baselineSdkExternal.file, env },
    listSourceMaps: { file: bundles.list.file, env: { ...env, NODE_OPTIONS: '--enable-source-maps' } },
  };
  type Variant = keyof typeof variants;
  const names = Object.keys(variants) as Variant[];
  const times = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<Variant, number[]>;
  for (const name of names) await timeFreshProcess(variants[name].file, variants[name].env); // warm the file cache
  progress(`cold start: ${names.length} variants, ${runs} fresh processes each, interleaved`);
  for (let run = 0; run < runs; run += 1) {
    // Rotate the order each round so that no variant always runs first.
    for (const name of [...names.slice(run % names.length), ...names.slice(0, run % names.length)]) {
      times[name].push(await timeFreshProcess(variants[name].file, variants[name].env));
    }
  }
  const ms = (name: Variant) => median(times[name]);
  const ratio = (ours: Variant, floor: Variant, name: string, target?: number) =>
    figure(
      SECTION,
      name,
      ms(ours) / ms(floor),
      'x',
      target === undefined ? undefined : { target: `<= ${target}x`, pass: ms(ours) / ms(floor) <= target },
      `${ms(ours).toFixed(0)} ms vs ${ms(floor).toFixed(0)} ms`,
    );
  const figures: Figure[] = [
    ratio('list', 'baseline', 'list handler as deployed (SDK bundled) vs bare SDK, bundled', TARGET),
    ratio('listSdkExternal', 'baselineSdkExternal', 'list handler, SDK external vs bare SDK from node_modules', TARGET),
    ratio('list', 'listSdkExternal', 'SDK bundled vs SDK external (below 1: bundling is faster)'),
    ratio('listSourceMaps', 'list', 'cost of NODE_OPTIONS=--enable-source-maps (not deployed)'),
  ];
  figures.push(
    figure(SECTION, 'bundle: list handler, SDK bundled', bundles.list.kib, 'KiB'),
    figure(SECTION, 'bundle: bare SDK, bundled', bundles.baseline.kib, 'KiB'),
    figure(SECTION, 'bundle: list handler, SDK external', bundles.listSdkExternal.kib, 'KiB'),
  );
  await rm(OUT, { recursive: true, force: true });
  return figures;
}
