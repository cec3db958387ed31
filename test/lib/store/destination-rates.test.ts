import { randomUUID } from 'node:crypto';
import { takeRateTokens } from '../../../lib/store/destination-rates';
import { useEmbeddedStore } from '../../support/embedded-store';

useEmbeddedStore();

const destination = () => `site:${randomUUID()}.example`;

describe('takeRateTokens', () => {
  it('gives takers at once no more than the capacity of a second, in leases', async () => {
    const where = destination();
    const second = Math.floor(Date.now() / 1000);
    const taken = await Promise.all(Array.from({ length: 12 }, () => takeRateTokens(where, 0, second, 2, 10)));
    expect(taken.filter(Boolean)).toHaveLength(5);
  });

  it('starts the count again in the next second, and in each partition on its own', async () => {
    const where = destination();
    const second = Math.floor(Date.now() / 1000);
    expect(await takeRateTokens(where, 0, second, 3, 3)).toBe(true);
    expect(await takeRateTokens(where, 0, second, 1, 3)).toBe(false);
    expect(await takeRateTokens(where, 1, second, 3, 3)).toBe(true);
    expect(await takeRateTokens(where, 0, second + 1, 3, 3)).toBe(true);
    // A taker whose clock is behind gets no second it has passed.
    expect(await takeRateTokens(where, 0, second, 1, 3)).toBe(false);
  });

  it('does not let a second far ahead (a clock mistaken) hold the counter', async () => {
    const where = destination();
    const second = Math.floor(Date.now() / 1000);
    expect(await takeRateTokens(where, 0, second + 3_600, 3, 3)).toBe(true);
    expect(await takeRateTokens(where, 0, second, 3, 3)).toBe(true);
  });
});
