import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

export interface RunningServer {
  process: ChildProcessWithoutNullStreams;
  url: string;
  dynamoDbPort: number;
  /** Everything the process printed so far (stdout and stderr). */
  output: () => string;
  /** Sends the signal and resolves with the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

/** Runs a project TypeScript entry point the way the npm scripts do (through tsx). */
export function spawnScript(entry: string, args: string[], env: Record<string, string>): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, entry), ...args], {
    cwd: ROOT,
    env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'INFO', ...env },
  });
}

/** `npm start` as a child process, on free ports, until it prints where it listens. */
export async function startServerProcess(env: Record<string, string>): Promise<RunningServer> {
  const child = spawnScript('infra/local/start.ts', [], { PORT: '0', DYNAMODB_PORT: '0', ...env });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const listening = new Promise<RegExpExecArray>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/localhost:\d+) \(DynamoDB at http:\/\/127\.0\.0\.1:(\d+)\)/.exec(output);
      if (match) resolve(match);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => reject(new Error(`server exited with ${code} before listening:\n${output}`)));
  });
  const match = await listening;
  // Let the lines printed right after "listening" (the key) arrive.
  await new Promise((resolve) => setTimeout(resolve, 200));
  return {
    process: child,
    url: match[1]!,
    dynamoDbPort: Number(match[2]),
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      child.kill(signal);
      return exited;
    },
  };
}

export async function runScript(entry: string, args: string[], env: Record<string, string>) {
  const child = spawnScript(entry, args, env);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  return { code, stdout, stderr, lastLine: stdout.trimEnd().split('\n').at(-1) ?? '' };
}
