/**
 * The dev chain's keeper, forked by dev-chain.ts: it runs anvil, snapshots its chain while it runs
 * (dev-chain-history.ts) and stops it, with a last snapshot, on SIGTERM, SIGHUP or when the IPC
 * channel closes, which is how it learns that its parent died, even by SIGKILL. Its own process
 * group keeps Ctrl-C in a terminal (which signals `npm start`'s group) from stopping anvil before
 * that last snapshot: the parent decides when the chain stops.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { DevChainProcessMessage, DevChainProcessSpec } from './dev-chain';
import { keepSnapshots, loadedDevChainState, prepareDevChainState, type SnapshotKeeper } from './dev-chain-history';

async function main() {
  // After the parent's death its pipes are closed: what anvil still says is dropped, not a crash before the last snapshot.
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  let anvil: ChildProcess | undefined;
  let snapshots: SnapshotKeeper | undefined;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await snapshots?.stop();
    if (anvil) anvil.kill('SIGTERM');
    else process.exit(0);
  };
  // Listened for before anything else: a parent gone while the state is readied leaves no anvil behind.
  process.on('disconnect', () => void stop());
  process.on('SIGTERM', () => void stop());
  process.on('SIGHUP', () => void stop());
  process.on('SIGINT', () => undefined);
  const spec = JSON.parse(process.argv[2]!) as DevChainProcessSpec;
  // A chain kept in memory still puts its recent states on disk: in a directory of its own, removed
  // when anvil exits (anvil's default, under ~/.foundry, is left behind whenever anvil is killed).
  const recentStates = spec.stateDirectory ? undefined : mkdtempSync(path.join(tmpdir(), 'webhooks-dev-chain-'));
  const stateArgs = spec.stateDirectory ? await prepareDevChainState(spec.stateDirectory, (message) => console.error(message)) : ['--cache-path', recentStates!];
  anvil = spawn(spec.binary, [...spec.args, ...stateArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
  anvil.on('error', (error) => {
    console.error(error.message);
    process.exit(1);
  });
  anvil.on('exit', (code, signal) => {
    snapshots?.halt();
    if (recentStates) rmSync(recentStates, { recursive: true, force: true });
    process.exit(code ?? (signal ? 1 : 0));
  });
  if (anvil.pid && process.connected) process.send!({ type: 'anvil', pid: anvil.pid } satisfies DevChainProcessMessage);
  anvil.stderr!.pipe(process.stderr);
  createInterface({ input: anvil.stdout! }).on('line', (line) => {
    process.stdout.write(`${line}\n`);
    const listening = /Listening on ([\d.]+:\d+)/.exec(line);
    if (!listening || !spec.stateDirectory || snapshots || stopping) return;
    loadedDevChainState(spec.stateDirectory);
    snapshots = keepSnapshots(`http://${listening[1]}`, spec.stateDirectory, (message) => console.error(message));
  });
}

main().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
