import { fork } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { StartupError } from './startup-error';
import { supervise, type ProcessExit, type ProcessMessage } from './supervisor';

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
  unexpectedExit: Promise<ProcessExit>;
  /** Stops the node, having saved its chain. */
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
const START_TIMEOUT_MS = 30_000;
const ENTRY = path.join(__dirname, 'dev-chain-process-main.ts');

/** What the keeper process (dev-chain-process-main.ts) runs: anvil with these arguments, kept in `stateDirectory`. */
export interface DevChainProcessSpec {
  binary: string;
  args: string[];
  stateDirectory?: string;
}

/** The keeper says only anvil's pid: its ready signal is anvil's "Listening on" line on its stdout. */
export type DevChainProcessMessage = ProcessMessage<undefined, { type: 'anvil'; pid: number }>;

/**
 * Starts anvil on loopback under its keeper (dev-chain-process-main.ts) and resolves once it is
 * listening. The keeper stops anvil, having saved its chain, when this process is gone, however it
 * ended: without it, a server killed on its own left anvil running, holding the dev chain's port.
 * A keeper killed on its own leaves anvil to this process, which kills it.
 */
export async function startDevChain(options: DevChainOptions, binary = findAnvil()): Promise<DevChain> {
  if (!binary) throw new StartupError(`no anvil binary for ${process.platform}-${process.arch} (npm package ${platformPackage() ?? 'none'}, nor on PATH)`);
  const args = ['--host', '127.0.0.1', '--port', String(options.port), '--chain-id', options.chainId];
  if (options.blockTimeSeconds) args.push('--block-time', String(options.blockTimeSeconds));
  const spec: DevChainProcessSpec = { binary, args, stateDirectory: options.stateDirectory };
  const keeper = supervise<DevChainProcessMessage>(
    fork(ENTRY, [JSON.stringify(spec)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'pipe', 'pipe', 'ipc'], detached: true }),
    { ask: 'SIGTERM', timeoutMs: STOP_TIMEOUT_MS },
  );
  let anvilPid: number | undefined;
  keeper.child.on('message', (message: DevChainProcessMessage) => {
    if (message.type === 'anvil') anvilPid = message.pid;
  });
  // A keeper that exits by itself does so once anvil is gone; one killed by a signal may leave it running.
  void keeper.exited.then(({ signal }) => {
    if (signal && anvilPid !== undefined) killIfRunning(anvilPid);
  });
  const output: string[] = [];
  const held: string[] = [];
  let listening = false;
  // What the keeper or anvil says on stderr (a chain moved from an earlier version, a snapshot that
  // failed, anvil's errors) is said here once it listens; before, it explains a failure to start.
  createInterface({ input: keeper.child.stderr! }).on('line', (line) => {
    if (listening) return console.error(line);
    remember(output, line);
    held.push(line);
  });
  const port = await keeper
    .whenReady({
      line: (line) => {
        remember(output, line);
        const found = /Listening on [\d.]+:(\d+)/.exec(line);
        if (!found) return undefined;
        listening = true;
        for (const line of held.splice(0)) console.error(line);
        return Number(found[1]);
      },
      timeout: { ms: START_TIMEOUT_MS, error: () => new StartupError(`the dev chain (anvil) did not start within ${START_TIMEOUT_MS / 1000} s`) },
      couldNotStart: (error) => new StartupError(`the dev chain (anvil) could not start: ${error.message}`),
      exitedBeforeReady: ({ code, signal }) => new StartupError(`the dev chain (anvil) exited (${signal ?? `code ${code}`}) before listening: ${lastLines(output)}`),
    })
    .catch(async (error: unknown) => {
      keeper.child.kill('SIGKILL');
      throw error;
    });
  return {
    rpcUrl: `http://127.0.0.1:${port}`,
    port,
    pid: keeper.pid,
    binary,
    unexpectedExit: keeper.unexpectedExit,
    stop: keeper.close,
  };
}

function killIfRunning(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
}

function remember(lines: string[], line: string): void {
  lines.push(line);
  if (lines.length > 20) lines.shift();
}

function lastLines(lines: string[]): string {
  const meaningful = lines.map((line) => line.trim()).filter(Boolean);
  return meaningful.slice(-3).join(' | ') || 'no output';
}
