import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

export interface ListeningProcess {
  process: ChildProcessWithoutNullStreams;
  /** The groups of the pattern that announced the process was listening. */
  match: RegExpExecArray;
  /** Everything the process printed so far (stdout and stderr). */
  output: () => string;
  /** Sends the signal and resolves with the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export interface RunningServer extends ListeningProcess {
  url: string;
  dynamoDbPort: number;
}

/** Runs a project TypeScript entry point the way the npm scripts do (through tsx). */
export function spawnScript(entry: string, args: string[], env: Record<string, string>, nodeArgs: string[] = []): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(ROOT, entry), ...args], {
    cwd: ROOT,
    env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'INFO', ...env },
  });
}

/** Starts a script and resolves once its output matches `listening`: what the caller reads of it then must be within the match. */
export async function spawnListening(
  entry: string,
  env: Record<string, string>,
  listening: RegExp,
  nodeArgs: string[] = [],
): Promise<ListeningProcess> {
  const child = spawnScript(entry, [], env, nodeArgs);
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      // Keep only the head of the output: a long-running server's request log is not needed.
      if (output.length < 64 * 1024) output += chunk.toString();
      const found = listening.exec(output);
      if (found) resolve(found);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => reject(new Error(`${entry} exited with ${code} before listening:\n${output}`)));
  });
  return {
    process: child,
    match,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      child.kill(signal);
      return exited;
    },
  };
}

/**
 * The node flags of package.json's start script (`exec node <flags> --import tsx infra/local/start.ts`).
 * `exec` makes node replace the shell npm runs the script in, so that the signals npm passes on reach it.
 */
export function npmStartNodeArgs(): string[] {
  const start = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const words = start.trim().split(/\s+/);
  const entry = words.indexOf('--import');
  if (words[0] !== 'exec' || words[1] !== 'node' || words.slice(entry).join(' ') !== '--import tsx infra/local/start.ts') {
    throw new Error(`package.json start script is not 'exec node <flags> --import tsx infra/local/start.ts': ${start}`);
  }
  return words.slice(2, entry);
}

/**
 * `npm start` as a child process (its node flags included), on free ports, until it prints where it
 * listens and the rest of its banner, which ends with the line to try a key or to make more.
 */
export async function startServerProcess(env: Record<string, string>, nodeArgs: string[] = []): Promise<RunningServer> {
  const server = await spawnListening(
    'infra/local/start.ts',
    { PORT: '0', DYNAMODB_PORT: '0', DEV_CHAIN_PORT: '0', ...env },
    /listening on (http:\/\/\S+:\d+) \(DynamoDB at http:\/\/127\.0\.0\.1:(\d+)\)\n(?:.*\n)*?(?: {2}curl -s |More keys: ).*\n/,
    [...npmStartNodeArgs(), ...nodeArgs],
  );
  return { ...server, url: server.match[1]!, dynamoDbPort: Number(server.match[2]) };
}

export async function runScript(entry: string, args: string[], env: Record<string, string>, nodeArgs: string[] = []) {
  const child = spawnScript(entry, args, env, nodeArgs);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  return { code, stdout, stderr, lastLine: stdout.trimEnd().split('\n').at(-1) ?? '' };
}

/** A process's state letter and parent pid, from the kernel's /proc/<pid>/stat; undefined once it is gone. */
export function procStat(pid: number): { state: string; parentPid: number } | undefined {
  try {
    // The fields after the command name, which is in parentheses and may itself hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state = '', parentPid = ''] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state, parentPid: Number(parentPid) };
  } catch {
    return undefined;
  }
}

/** The pids of the running processes whose parent is `parent`, and whose command line contains `command` when given (from /proc). */
export function childrenOf(parent: number, command?: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => procStat(pid)?.parentPid === parent)
    .filter((pid) => command === undefined || commandLine(pid).includes(command));
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** Whether a process with this pid is running (a zombie, exited but not yet reaped, is not). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = procStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}

/** Resolves once the process has exited; fails the test when it still runs after `timeoutMs`. */
export async function waitUntilGone(pid: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (isRunning(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} still runs after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The JSON log lines a process printed (other lines, such as the banner, left out). */
export function logLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
