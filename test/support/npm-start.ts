import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { isRunning, logLines, procStat, waitUntilGone } from './processes';
import type { Receiver } from './receiver';

const ROOT = path.resolve(__dirname, '../..');

export interface NpmStart {
  child: ChildProcessWithoutNullStreams;
  url: string;
  /** The pids of npm, the server (node, exec'd by npm's shell), the embedded DynamoDB's process, the gateway's and the background work's. */
  pids: { npm: number; server: number; store: number; gateways: number[]; background: number };
  /** The last 256 KiB of what it printed. */
  output: () => string;
  exited: Promise<number | null>;
  /** SIGKILL to the whole process group (npm, the server, the gateway, the background work; the store has its own), then waits until all are gone. */
  killGroup: () => Promise<void>;
}

/**
 * A port that was free a moment ago, picked at random below the kernel's ephemeral range
 * (32768-60999): a port from listen(0) can be handed again to any connection or listener
 * the parallel test files open before the process under test binds it.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    if (await canListen(port)) return port;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * `npm start` itself, in a process group of its own (so that the group can be killed as a crash
 * would, without touching jest's), until it prints where it listens and its "started" line.
 */
export async function startNpmStart(env: Record<string, string>): Promise<NpmStart> {
  const childEnv: Record<string, string | undefined> = { ...process.env, POWERTOOLS_LOG_LEVEL: 'INFO', DEV_CHAIN_PORT: '0', ...env };
  delete childEnv.DYNAMODB_ENDPOINT;
  const child = spawn('npm', ['start'], { cwd: ROOT, env: childEnv, detached: true });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 512 * 1024) output = output.slice(-256 * 1024);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const url = await new Promise<string>((resolve, reject) => {
    const check = () => {
      const listening = /listening on (http:\/\/\S+:\d+)/.exec(output);
      if (listening && /"message":"started"/.test(output)) resolve(listening[1]!);
    };
    child.stdout.on('data', check);
    void exited.then((code) => reject(new Error(`npm start exited with ${code} before listening:\n${output}`)));
  });
  const started = logLines(output).find((line) => line.message === 'started')!;
  const store = started.dynamoDbPid as number;
  const server = procStat(store)!.parentPid;
  const pids = { npm: child.pid!, server, store, gateways: started.gatewayPids as number[], background: started.backgroundPid as number };
  return {
    child,
    url,
    pids,
    output: () => output,
    exited,
    killGroup: async () => {
      try {
        process.kill(-pids.npm, 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
      for (const pid of [pids.server, pids.store, ...pids.gateways, pids.background]) if (isRunning(pid)) await waitUntilGone(pid);
    },
  };
}

/** Calls the API of the server at `url()` (read at each call: a restart moves it) with `key`, JSON in and out. */
export function apiCaller(url: () => string, key: string) {
  return async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${url()}${route}`, {
      method,
      headers: { 'x-service-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
}

/** The warning and error lines npm start printed, for a failing test's message. */
export const warningsOf = (started: NpmStart | undefined) =>
  logLines(started?.output() ?? '')
    .filter((line: any) => line.level === 'WARN' || line.level === 'ERROR')
    .map((line) => JSON.stringify(line))
    .join('\n');

/** The dev chain's JSON-RPC URL, from the "started" line `npm start` logged. */
export const devChainUrl = (started: NpmStart) => (logLines(started.output()).find((line: any) => line.message === 'started') as any).devChain.rpcUrl as string;

/**
 * After all of a file's tests: kills npm start's whole group, then closes the receivers (which
 * destroys a dead receiver's hanging sockets, which would otherwise keep jest alive); whichever
 * `running()` and `receivers()` hold by then.
 */
export function stopAfterAll(running: () => NpmStart | undefined, receivers: () => Receiver | Receiver[] | undefined = () => undefined): void {
  afterAll(async () => {
    await running()?.killGroup();
    await Promise.all([receivers() ?? []].flat().map((receiver) => receiver.close()));
  });
}
