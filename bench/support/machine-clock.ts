/**
 * Milliseconds (fractional) on the machine's monotonic clock (CLOCK_MONOTONIC, which
 * `process.hrtime` reads): one clock for every process of the machine, so that a time taken in the
 * bench and one taken in a receiver process subtract exactly, with no wall-clock mapping between them.
 */
export function machineClockMs(): number {
  const [seconds, nanoseconds] = process.hrtime();
  return seconds * 1000 + nanoseconds / 1e6;
}
