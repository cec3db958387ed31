import { createApiKey } from '../../lib/keys/api-keys';
import { load } from '../support/load';
import { pacedLoad } from '../support/paced-load';
import { figure, type BenchOptions, type Figure } from '../support/report';
import { startBenchService } from '../support/service';

const SECTION = '5 throttling';

/**
 * A usage plan of rate R and burst B offered a steady 5xR for 10 s: accepted requests should be
 * B + R x 10 (within 5%), the rest 429 with Retry-After, none 5xx.
 */
export async function throttling({ quick, progress }: BenchOptions, storeEnv: Record<string, string>): Promise<Figure[]> {
  const rate = 50;
  const burst = 100;
  const seconds = quick ? 3 : 10;
  const { service, key, account } = await startBenchService(storeEnv, { THROTTLE_RATE_LIMIT: String(rate), THROTTLE_BURST_LIMIT: String(burst) });
  try {
    // Warm the server up with another key of the account: the measured key's bucket stays full.
    const { key: warmupKey } = await createApiKey(account);
    await load({ url: `${service.url}/v1/webhooks:getSharedSecret`, headers: { 'x-service-api-key': warmupKey }, connections: 4, amount: 200 });
    progress(`throttling: offering a steady ${5 * rate} req/s for ${seconds} s to a plan of rate ${rate}, burst ${burst}`);
    const result = await pacedLoad({ url: `${service.url}/v1/webhooks:getSharedSecret`, headers: { 'x-service-api-key': key }, rate: 5 * rate, seconds });
    const accepted = result.statusCounts[200] ?? 0;
    const throttled = result.statusCounts[429] ?? 0;
    const serverErrors = Object.entries(result.statusCounts).filter(([code]) => Number(code) >= 500).reduce((sum, [, count]) => sum + count, 0);
    // The bucket refills from the first request to the last, i.e. over the sending time.
    const expected = burst + rate * result.sendingSeconds;
    const deviation = accepted / expected - 1;
    const retryAfterOk = result.retryAfters.length > 0 && result.retryAfters.every((value) => /^[1-9]\d*$/.test(value));
    return [
      figure(SECTION, `offered (${5 * rate}/s for ${seconds} s)`, result.offered, 'requests', undefined, `sent over ${result.sendingSeconds.toFixed(2)} s`),
      figure(SECTION, 'accepted vs B + R x t', Math.round(deviation * 1000) / 10, '%', { target: 'within ±5%', pass: Math.abs(deviation) <= 0.05 }, `${accepted} accepted, expected ${Math.round(expected)}`),
      figure(SECTION, 'refused with 429', throttled, 'requests', { target: '= offered - accepted', pass: throttled === result.offered - accepted }),
      figure(SECTION, '429s carrying Retry-After', retryAfterOk ? 1 : 0, '', { target: 'all, whole seconds', pass: retryAfterOk }, `values seen: ${result.retryAfters.join(', ')}`),
      figure(SECTION, '5xx responses', serverErrors, 'responses', { target: '= 0', pass: serverErrors === 0 }),
    ];
  } finally {
    await service.stop();
  }
}
