import { spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { stopChildProcess } from './child-process';
import { StartupError } from './startup-error';

export const DEFAULT_DEV_CHAIN_PORT = 8545;
export const DEFAULT_DEV_CHAIN_ID = '31337';

export interface DevChainOptions {
  /** 0 picks a free port. */
  port: number;
  chainId: string;
  /** Where the chain's blocks and state persist across restarts; absent keeps them in memory. */
  stateDirectory?: string;
  /** Seconds between blocks; absent mines a block for each transaction as it arrives. */
  blockTimeSeconds?: number;
}

export interface DevChain {
  rpcUrl: string;
  port: number;
  pid: number;
  binary: string;
  /** Settles if the node exits without having been asked to stop. */
  unexpectedExit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Stops the node; it saves its state on the way out. */
  stop(): Promise<void>;
}

/** npm's package per platform for Foundry's anvil (`@foundry-rs/anvil` lists them as optional dependencies). */
function platformPackage(): string | undefined {
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch as string];
  const platform = { linux: 'linux', darwin: 'darwin', win32: 'win32' }[process.platform as string];
  return arch && platform ? `@foundry-rs/anvil-${platform}-${arch}` : undefined;
}

const binaryName = process.platform === 'win32' ? 'anvil.exe' : 'anvil';

/**
 * The anvil binary: the one npm installed for this platform, else an `anvil` on PATH, else none
 * (this registry, for one, lacks other platforms' packages).
 */
export function findAnvil(): string | undefined {
  const fromNpm = platformPackage();
  if (fromNpm) {
    try {
      const binary = path.join(path.dirname(require.resolve(`${fromNpm}/package.json`)), 'bin', binaryName);
      accessSync(binary, constants.X_OK);
      return binary;
    } catch {
      // Not installed for this platform: try PATH.
    }
  }
  for (const directory of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(directory, binaryName);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

const STOP_TIMEOUT_MS = 10_000;

/**
 * anvil runs under a small node process that stops it (SIGTERM: it saves its state) when this
 * process is gone, however it ended: the IPC channel closes even on SIGKILL. Without it, a server
 * killed on its own left anvil running, holding the dev chain's port.
 */
const WATCHDOG = `
const { spawn } = require('node:child_process');
const anvil = spawn(process.argv[1], process.argv.slice(2), { stdio: 'inherit' });
const stop = () => anvil.kill('SIGTERM');
process.on('disconnect', stop);
process.on('SIGTERM', stop);
process.on('SIGINT', () => undefined);
anvil.on('error', (error) => { console.error(error.message); process.exit(1); });
anvil.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
`;
const START_TIMEOUT_MS = 30_000;

/** Starts anvil on loopback and resolves once it is listening. */
export async function startDevChain(options: DevChainOptions, binary = findAnvil()): Promise<DevChain> {
  if (!binary) throw new StartupError(`no anvil binary for ${process.platform}-${process.arch} (npm package ${platformPackage() ?? 'none'}, nor on PATH)`);
  const args = ['--host', '127.0.0.1', '--port', String(options.port), '--chain-id', options.chainId];
  if (options.stateDirectory) {
    mkdirSync(options.stateDirectory, { recursive: true });
    // Saved every second and on exit: after a SIGKILL the chain may come back up to a second behind.
    // With the states the blocks were executed on: without them, a reloaded block the follower has
    // not taken yet has no traces ("Resource not found"), and the follower waits for them forever.
    args.push('--state', path.join(options.stateDirectory, 'state.json'), '--state-interval', '1', '--preserve-historical-states');
  }
  if (options.blockTimeSeconds) args.push('--block-time', String(options.blockTimeSeconds));
  const child = spawn(process.execPath, ['-e', WATCHDOG, binary, ...args], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const output: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    const timeout = setTimeout(() => reject(new StartupError(`the dev chain (anvil) did not start within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
    child.once('error', (error) => reject(new StartupError(`the dev chain (anvil) could not start: ${error.message}`)));
    void exited.then(({ code, signal }) =>
      reject(new StartupError(`the dev chain (anvil) exited (${signal ?? `code ${code}`}) before listening: ${lastLines(output)}`)),
    );
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        output.push(line);
        if (output.length > 20) output.shift();
        const listening = /Listening on [\d.]+:(\d+)/.exec(line);
        if (listening) {
          clearTimeout(timeout);
          resolve(Number(listening[1]));
        }
      });
    }
  }).catch(async (error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  let stopRequested = false;
  return {
    rpcUrl: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    binary,
    unexpectedExit: exited.then((exit) => (stopRequested ? new Promise<never>(() => undefined) : exit)),
    stop: async () => {
      stopRequested = true;
      await stopChildProcess(child, exited, () => child.kill('SIGTERM'), STOP_TIMEOUT_MS);
    },
  };
}

function lastLines(lines: string[]): string {
  const meaningful = lines.map((line) => line.trim()).filter(Boolean);
  return meaningful.slice(-3).join(' | ') || 'no output';
}
