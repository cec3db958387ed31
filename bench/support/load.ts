import type { EventEmitter } from 'node:events';
import autocannon from 'autocannon';
import * as hdr from 'hdr-histogram-js';

export interface LoadResult {
  /** Microseconds. */
  p50: number;
  p99: number;
  requests: number;
  statusCounts: Record<number, number>;
  seconds: number;
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  duration?: number;
  amount?: number;
  overallRate?: number;
}

/**
 * Drives a server with autocannon and records each response's latency in microseconds (autocannon's
 * own histogram keeps whole milliseconds, too coarse for sub-millisecond responses).
 */
export async function load(options: LoadOptions): Promise<LoadResult> {
  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
  const statusCounts: Record<number, number> = {};
  const given = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)); // autocannon refuses explicit undefineds
  const instance = autocannon({ method: 'GET', pipelining: 1, ...given, url: options.url }) as unknown as EventEmitter & Promise<autocannon.Result>; // without a callback: an emitter that is also a promise
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    statusCounts[statusCode] = (statusCounts[statusCode] ?? 0) + 1;
    histogram.recordValue(Math.max(1, Math.round(responseTime * 1000)));
  });
  const result = await instance;
  return {
    p50: histogram.getValueAtPercentile(50),
    p99: histogram.getValueAtPercentile(99),
    requests: histogram.totalCount,
    statusCounts,
    seconds: result.duration,
  };
}
