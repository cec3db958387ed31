import { randomAccount } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { expectError, type HttpResponse } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

// One request a second with a burst of three: a quick run of six requests empties the bucket.
const api = webhooksApi(useLocalService({ THROTTLE_RATE_LIMIT: '1', THROTTLE_BURST_LIMIT: '3' }));

async function burst(key: string, count: number): Promise<HttpResponse[]> {
  const responses: HttpResponse[] = [];
  for (let index = 0; index < count; index += 1) responses.push(await api.call('GET', '/v1/webhooks', { key }));
  return responses;
}

const statuses = (responses: HttpResponse[]) => responses.map((response) => response.status);

describe('throttling per API key', () => {
  it('lets the first 3 requests of a quick burst through and answers the rest 429', async () => {
    const responses = await burst(await api.newAccountKey(), 6);
    expect(statuses(responses)).toEqual([200, 200, 200, 429, 429, 429]);
  });

  it('answers 429 in the error shape with a Retry-After of whole positive seconds', async () => {
    const [throttled] = (await burst(await api.newAccountKey(), 5)).slice(4);
    expectError(throttled!, 429);
    expect(throttled!.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
  });

  it("throttles another account's key in its own bucket", async () => {
    const exhausted = await api.newAccountKey();
    expect(statuses(await burst(exhausted, 4))).toEqual([200, 200, 200, 429]);
    expect(statuses(await burst(await api.newAccountKey(), 3))).toEqual([200, 200, 200]);
  });

  it('throttles a second key of the same account in its own bucket', async () => {
    const account = randomAccount();
    const [first, second] = [await api.keyFor(account), await api.keyFor(account)];
    expect(statuses(await burst(first, 4))).toEqual([200, 200, 200, 429]);
    expect(statuses(await burst(second, 3))).toEqual([200, 200, 200]);
  });

  it("counts every operation against the key's one bucket", async () => {
    const key = await api.newAccountKey();
    const responses = [
      await api.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key }),
      await api.call('GET', '/v1/webhooks:getSharedSecret', { key }),
      await api.call('GET', '/v1/webhooks', { key }),
      await api.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key }),
    ];
    expect(statuses(responses)).toEqual([201, 200, 200, 429]);
  });
});
