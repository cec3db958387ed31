import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** Linux reports process CPU time in clock ticks of 1/100 s (USER_HZ, fixed for user space). */
const MICROSECONDS_PER_TICK = 10_000;

/**
 * CPU time (user + system, all threads) a process has used so far, in microseconds, from the
 * kernel's accounting; undefined where there is no /proc (not Linux).
 */
export function processCpuMicros(pid: number): number | undefined {
  try {
    // Fields after the command name, which is in parentheses and may contain spaces: utime and stime are the 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * MICROSECONDS_PER_TICK;
  } catch {
    return undefined;
  }
}

/** The CPU time of several processes together (a service's), in microseconds; undefined if any cannot tell. */
export function processesCpuMicros(pids: number[]): number | undefined {
  let total = 0;
  for (const pid of pids) {
    const micros = processCpuMicros(pid);
    if (micros === undefined) return undefined;
    total += micros;
  }
  return total;
}

/** Peak RSS (VmHWM) of a process, in KiB. */
export async function peakRssKiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1]);
}

/** Current RSS (VmRSS) of a process, in KiB. */
export async function rssKiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]);
}
