import { createReadStream, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';

/**
 * The dev chain's history on disk: anvil's own dump of the chain (`anvil_dumpState`: every block,
 * transaction and receipt, and the world state at the head), gzipped as anvil hands it out. It is
 * written whole, atomically (a new file renamed over the old), whenever the head has moved, and
 * read back by anvil at start (`--load-state`). See docs/chain-follower.md, "The dev chain's history".
 *
 * What it leaves out is anvil's copy of the world state at every block (`--preserve-historical-states`):
 * each copy holds every account and every block hash so far, so they grow with the square of the
 * chain, and anvil stops answering while it serialises them.
 */
export interface DevChainFiles {
  /** The last snapshot; what the chain comes back to. */
  snapshot: string;
  /** The snapshot ungzipped for anvil to load at start (anvil reads plain JSON only); removed once it listens. */
  loading: string;
  /** anvil's states of recent blocks (what a trace re-executes a block on) while it runs: emptied at each start. */
  recentStates: string;
}

export function devChainFiles(stateDirectory: string): DevChainFiles {
  return {
    snapshot: path.join(stateDirectory, 'chain.json.gz'),
    loading: path.join(stateDirectory, 'chain-loading.json'),
    recentStates: path.join(stateDirectory, 'recent-states'),
  };
}

/**
 * Recent blocks' states anvil keeps on disk (besides a few in memory): blocks older than that have
 * no traces. Each is a copy of the whole world state (up to about 1 MB on a chain of thousands of
 * blocks), so this bounds the directory to some hundreds of MB.
 */
const RECENT_STATES_ON_DISK = 512;

/** How often the head is read to see whether the chain changed. */
const POLL_MS = 200;
/** A snapshot takes anvil's time (it answers nothing else meanwhile): at most a fifth of it, and no more often than this. */
const MIN_GAP_MS = 500;
const MAX_DUTY_SHARE = 0.2;

const gunzipAsync = promisify(gunzip);
const gzipAsync = promisify(gzip);

/**
 * Readies the state directory for anvil and returns the flags that make anvil load the last
 * snapshot and keep its recent states there; `warn` tells what the user should know. A snapshot
 * being written when the keeper was killed was never renamed into place, and anvil's recent states
 * of a previous run are of no use to this one: both are removed.
 */
export async function prepareDevChainState(stateDirectory: string, warn: (message: string) => void): Promise<string[]> {
  const files = devChainFiles(stateDirectory);
  mkdirSync(stateDirectory, { recursive: true });
  rmSync(`${files.snapshot}.tmp`, { force: true });
  rmSync(files.loading, { force: true });
  rmSync(files.recentStates, { recursive: true, force: true });
  await migrateEarlierState(stateDirectory, files.snapshot, warn);
  const args = ['--cache-path', files.recentStates, '--max-persisted-states', String(RECENT_STATES_ON_DISK)];
  if (!existsSync(files.snapshot)) return args;
  try {
    await writeFile(files.loading, await gunzipAsync(await readFile(files.snapshot)));
  } catch (error) {
    throw new Error(`the dev chain's snapshot ${files.snapshot} cannot be read (${(error as Error).message}): remove it to start a new chain`);
  }
  return [...args, '--load-state', files.loading];
}

/** Removes the ungzipped snapshot once anvil has loaded it (it listens only after loading). */
export function loadedDevChainState(stateDirectory: string): void {
  rmSync(devChainFiles(stateDirectory).loading, { force: true });
}

export interface SnapshotKeeper {
  /** Takes a last snapshot if the chain changed since the previous one, and stops. */
  stop(): Promise<void>;
  /** Stops at once, without a last snapshot (anvil is gone). */
  halt(): void;
}

/**
 * Snapshots the chain at `rpcUrl` whenever its head has moved: after a SIGKILL of anvil it comes
 * back without the blocks mined since the last snapshot, at most POLL_MS + the gap + two snapshots'
 * time (about 0.8 s on a small chain, 1.4 s on one of 10 000 blocks).
 */
export function keepSnapshots(rpcUrl: string, stateDirectory: string, warn: (message: string) => void): SnapshotKeeper {
  const { snapshot } = devChainFiles(stateDirectory);
  // anvil has just loaded the snapshot there is: nothing to save until its head moves.
  let savedHead: Promise<string | undefined> = existsSync(snapshot) ? latestBlockHash(rpcUrl).catch(() => undefined) : Promise.resolve(undefined);
  let nextAt = 0;
  let halted = false;
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let failing = false;

  const saveIfChanged = async (): Promise<void> => {
    const head = await latestBlockHash(rpcUrl);
    if (head === (await savedHead)) return;
    const started = Date.now();
    const gzipped = await rpc<string>(rpcUrl, 'anvil_dumpState', [false]);
    // Written beside it and renamed: a SIGKILL in the middle leaves the previous snapshot whole.
    await writeFile(`${snapshot}.tmp`, Buffer.from(gzipped.slice(2), 'hex'));
    await rename(`${snapshot}.tmp`, snapshot);
    savedHead = Promise.resolve(head);
    const took = Date.now() - started;
    nextAt = Date.now() + Math.max(MIN_GAP_MS, (took * (1 - MAX_DUTY_SHARE)) / MAX_DUTY_SHARE);
  };

  const tick = async () => {
    if (Date.now() >= nextAt) {
      running = saveIfChanged().then(
        () => {
          failing = false;
        },
        (error: unknown) => {
          // Told once per run of failures; anvil gone is told by its exit.
          if (!failing) warn(`the dev chain's snapshot failed (tried again): ${(error as Error).message}`);
          failing = true;
        },
      );
      await running;
    }
    if (!halted) timer = setTimeout(() => void tick(), POLL_MS);
  };
  timer = setTimeout(() => void tick(), POLL_MS);

  return {
    stop: async () => {
      halted = true;
      clearTimeout(timer);
      await running;
      await saveIfChanged().catch((error: unknown) => warn(`the dev chain's last snapshot failed: ${(error as Error).message}`));
    },
    halt: () => {
      halted = true;
      clearTimeout(timer);
    },
  };
}

async function latestBlockHash(rpcUrl: string): Promise<string> {
  return (await rpc<{ hash: string }>(rpcUrl, 'eth_getBlockByNumber', ['latest', false])).hash;
}

async function rpc<T>(rpcUrl: string, method: string, params: unknown[]): Promise<T> {
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(60_000),
  });
  const body = (await response.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

const EARLIER_STATE_FILE = 'state.json';
const HISTORICAL_STATES_KEY = Buffer.from(',"historical_states":');

/**
 * A state directory from before snapshots holds `state.json`, anvil's dump with the state of every
 * block (gigabytes, more than anvil can load in memory). Everything in it up to those states is the
 * chain itself: that part becomes the snapshot, and the file is removed. One that does not have
 * them all (cut off while anvil was writing it) is set aside as `state.json.unreadable`.
 */
async function migrateEarlierState(stateDirectory: string, snapshot: string, warn: (message: string) => void): Promise<void> {
  const earlier = path.join(stateDirectory, EARLIER_STATE_FILE);
  if (!existsSync(earlier) || existsSync(snapshot)) return;
  const chain = await prefixBefore(earlier, HISTORICAL_STATES_KEY);
  if (!chain) {
    renameSync(earlier, `${earlier}.unreadable`);
    return warn(`the dev chain's earlier state file was cut off while anvil wrote it: set aside as ${earlier}.unreadable, and a new chain started`);
  }
  await writeFile(`${snapshot}.tmp`, await gzipAsync(Buffer.concat([chain, Buffer.from('}')])));
  await rename(`${snapshot}.tmp`, snapshot);
  await rm(earlier);
  warn(`the dev chain's earlier state file became ${snapshot}, without the state of each block (its blocks before now have no traces)`);
}

/** The bytes of a file before the first `marker`, read only as far as it. */
async function prefixBefore(file: string, marker: Buffer): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    length += chunk.length;
    // Only the tail can complete a marker that the chunks before did not hold.
    const tail = Buffer.concat(chunks.length > 1 ? [chunks[chunks.length - 2]!, chunk] : [chunk]);
    const at = tail.indexOf(marker);
    if (at >= 0) return Buffer.concat(chunks).subarray(0, length - tail.length + at);
  }
  return undefined;
}
