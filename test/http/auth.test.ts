import { randomUUID } from 'node:crypto';
import { generateApiKey } from '../../lib/keys/api-keys';
import { revokeApiKey } from '../../lib/keys/key-revocation';
import { randomAccount, webhookInput } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { expectError, type HttpResponse } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

const api = webhooksApi(useLocalService());

/** One request per operation; the id need not exist, since authentication comes first. */
const operations: [string, string, unknown][] = [
  ['POST', '/v1/webhooks:generateOrRotateSharedSecret', undefined],
  ['GET', '/v1/webhooks:getSharedSecret', undefined],
  ['GET', '/v1/webhooks', undefined],
  ['POST', '/v1/webhooks', webhookInput()],
  ['GET', `/v1/webhooks/${randomUUID()}`, undefined],
  ['PATCH', `/v1/webhooks/${randomUUID()}`, { name: 'renamed' }],
  ['DELETE', `/v1/webhooks/${randomUUID()}`, undefined],
];

async function missingKeyMessage(): Promise<string> {
  return expectError(await api.call('GET', '/v1/webhooks'), 401);
}

describe('authentication with x-service-api-key', () => {
  it.each(operations)('answers %s %s without a key with 401', async (method, path, body) => {
    expectError(await api.call(method, path, { body }), 401);
  });

  it.each(operations)('answers %s %s with an unknown key with 401 and the message of a missing key', async (method, path, body) => {
    const response = await api.call(method, path, { key: generateApiKey().key, body });
    expect(expectError(response, 401)).toBe(await missingKeyMessage());
  });

  it.each([
    ['a UUID after the prefix', `whk_${randomUUID()}`],
    ['a key one character short', generateApiKey().key.slice(0, -1)],
    ['a key without its prefix', generateApiKey().key.slice(4)],
    ['a bearer token', `Bearer ${generateApiKey().key}`],
  ])('answers a value that cannot be a key (%s) with 401 and the message of a missing key', async (_, key) => {
    const response = await api.call('GET', '/v1/webhooks', { key });
    expect(expectError(response, 401)).toBe(await missingKeyMessage());
    expect(JSON.stringify(response.body)).not.toContain(key);
  });

  it.each(operations)('answers %s %s with a revoked key with 401 and the message of a missing key', async (method, path, body) => {
    const key = await api.newAccountKey();
    await revokeApiKey(key);
    const response = await api.call(method, path, { key, body });
    expect(expectError(response, 401)).toBe(await missingKeyMessage());
  });

  it('refuses a key at once after it is revoked', async () => {
    const key = await api.newAccountKey();
    expect((await api.call('GET', '/v1/webhooks', { key })).status).toBe(200);
    await revokeApiKey(key);
    expectError(await api.call('GET', '/v1/webhooks', { key }), 401);
  });

  it('keeps accepting the other keys of an account when one is revoked', async () => {
    const account = randomAccount();
    const [revoked, kept] = [await api.keyFor(account), await api.keyFor(account)];
    await revokeApiKey(revoked);
    expect((await api.call('GET', '/v1/webhooks', { key: kept })).status).toBe(200);
  });

  it('treats an empty x-service-api-key header as missing', async () => {
    const response = await api.call('GET', '/v1/webhooks', { headers: { 'x-service-api-key': '' } });
    expect(expectError(response, 401)).toBe(await missingKeyMessage());
  });

  it('accepts a valid key', async () => {
    const key = await api.newAccountKey();
    expect((await api.call('GET', '/v1/webhooks', { key })).status).toBe(200);
  });

  it('never shows the key in a response body, whether the request succeeds or fails', async () => {
    const key = await api.newAccountKey();
    const created = await api.call('POST', '/v1/webhooks', { key, body: webhookInput() });
    const id: string = created.body.id;
    const responses: HttpResponse[] = [
      created,
      await api.call('GET', '/v1/webhooks', { key }),
      await api.call('GET', `/v1/webhooks/${id}`, { key }),
      await api.call('PATCH', `/v1/webhooks/${id}`, { key, body: { name: 'renamed' } }),
      await api.call('GET', '/v1/webhooks:getSharedSecret', { key }),
      await api.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key }),
      await api.call('GET', '/v1/webhooks:getSharedSecret', { key }),
      await api.call('POST', '/v1/webhooks', { key, body: { ...webhookInput(), url: 'not a url' } }),
      await api.call('GET', '/v1/webhooks?pageToken=garbage', { key }),
      await api.call('DELETE', `/v1/webhooks/${id}`, { key }),
      await api.call('DELETE', `/v1/webhooks/${id}?permanent=true`, { key }),
      await api.call('DELETE', `/v1/webhooks/${id}?permanent=true`, { key }),
    ];
    expect(responses.map((response) => response.status)).toEqual([201, 200, 200, 200, 404, 201, 200, 400, 400, 200, 200, 404]);
    for (const response of responses) expect(JSON.stringify(response.body)).not.toContain(key);
  });

  it('never shows an unknown or revoked key in the 401 body', async () => {
    const unknown = generateApiKey().key;
    const revoked = await api.newAccountKey();
    await revokeApiKey(revoked);
    for (const key of [unknown, revoked]) {
      const response = await api.call('GET', '/v1/webhooks', { key });
      expect(response.status).toBe(401);
      expect(JSON.stringify(response.body)).not.toContain(key);
    }
  });
});
