import type { ChildProcess } from 'node:child_process';

/**
 * Asks a child process to stop (`ask`: a message or a signal) and waits for it to exit, killing it
 * with SIGKILL if it has not exited after `timeoutMs`. Returns at once if it has exited already.
 */
export async function stopChildProcess(child: ChildProcess, exited: Promise<unknown>, ask: () => void, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  ask();
  const timeout = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timeout);
}
