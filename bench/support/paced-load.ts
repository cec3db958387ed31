import { setTimeout as sleep } from 'node:timers/promises';

/**
 * An open-model load at a steady rate: request i is sent at start + i/rate, whatever the responses
 * do. autocannon's rate limit releases each second's quota at the start of the second, and a token
 * bucket answers bursts differently from a steady stream, so the throttling figure needs this.
 */
export async function pacedLoad(options: { url: string; headers: Record<string, string>; rate: number; seconds: number }) {
  const total = Math.round(options.rate * options.seconds);
  const interval = 1000 / options.rate;
  const statusCounts: Record<number, number> = {};
  const retryAfters = new Set<string>();
  const responses: Promise<void>[] = [];
  const start = performance.now();
  let lastSent = start;
  for (let index = 0; index < total; index += 1) {
    const wait = start + index * interval - performance.now();
    if (wait > 0) await sleep(wait);
    lastSent = performance.now();
    responses.push(
      fetch(options.url, { headers: options.headers }).then(async (response) => {
        await response.arrayBuffer();
        statusCounts[response.status] = (statusCounts[response.status] ?? 0) + 1;
        const retryAfter = response.headers.get('retry-after');
        if (response.status === 429) retryAfters.add(retryAfter ?? '(none)');
      }),
    );
  }
  await Promise.all(responses);
  return { statusCounts, retryAfters: [...retryAfters], sendingSeconds: (lastSent - start) / 1000, offered: total };
}
