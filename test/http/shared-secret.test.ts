import { useLocalService } from '../support/local-service';
import { expectError } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

const api = webhooksApi(useLocalService());

const SECRET_PATTERN = /^[0-9a-f]{64}$/;

function rotate(key: string, body?: unknown, query = '') {
  return api.call('POST', `/v1/webhooks:generateOrRotateSharedSecret${query}`, { key, body });
}

function getSecret(key: string) {
  return api.call('GET', '/v1/webhooks:getSharedSecret', { key });
}

async function currentSecret(key: string): Promise<string> {
  const response = await getSecret(key);
  expect(response.status).toBe(200);
  return response.body.secret;
}

describe('POST /v1/webhooks:generateOrRotateSharedSecret', () => {
  it('answers 201 with exactly {secret}, 64 lower-case hex characters', async () => {
    const response = await rotate(await api.newAccountKey());
    expect(response.status).toBe(201);
    expect(Object.keys(response.body)).toEqual(['secret']);
    expect(response.body.secret).toMatch(SECRET_PATTERN);
    expect(response.headers.get('content-type')).toMatch(/^application\/json\b/);
  });

  it.each([
    ['no body', undefined],
    ['an empty object', {}],
    ['an object with unknown fields', { algorithm: 'sha512', secret: 'mine', nested: { a: [1] } }],
  ])('accepts %s as the body and ignores it', async (_, body) => {
    const key = await api.newAccountKey();
    const response = await rotate(key, body);
    expect(response.status).toBe(201);
    expect(response.body.secret).toMatch(SECRET_PATTERN);
    expect(await currentSecret(key)).toBe(response.body.secret);
  });

  it('answers 400 to malformed JSON and leaves the secret unchanged', async () => {
    const key = await api.newAccountKey();
    const { secret } = (await rotate(key)).body;
    expectError(await rotate(key, '{"not json'), 400);
    expect(await currentSecret(key)).toBe(secret);
  });

  it('answers 400 to malformed JSON before any secret exists, and creates none', async () => {
    const key = await api.newAccountKey();
    expectError(await rotate(key, '{'), 400);
    expectError(await getSecret(key), 404);
  });

  it('replaces the secret on rotation', async () => {
    const key = await api.newAccountKey();
    const first = (await rotate(key)).body.secret;
    const second = (await rotate(key)).body.secret;
    expect(second).toMatch(SECRET_PATTERN);
    expect(second).not.toBe(first);
    expect(await currentSecret(key)).toBe(second);
  });

  it.each(['?endGracePeriod=true', '?endGracePeriod=false'])('rotates with %s', async (query) => {
    const key = await api.newAccountKey();
    const first = (await rotate(key)).body.secret;
    const response = await rotate(key, undefined, query);
    expect(response.status).toBe(201);
    expect(response.body.secret).toMatch(SECRET_PATTERN);
    expect(response.body.secret).not.toBe(first);
    expect(await currentSecret(key)).toBe(response.body.secret);
  });

  it.each([
    ['?endGracePeriod=yes', "Invalid query parameter endGracePeriod: must be 'true' or 'false'"],
    ['?endGrace=true', 'Unknown query parameter endGrace; allowed: endGracePeriod'],
  ])('answers 400 to %s and leaves the secret unchanged', async (query, message) => {
    const key = await api.newAccountKey();
    const { secret } = (await rotate(key)).body;
    expect(expectError(await rotate(key, undefined, query), 400)).toBe(message);
    expect(await currentSecret(key)).toBe(secret);
  });

  it('answers 20 concurrent rotations each with 201, and then returns one of their secrets', async () => {
    const key = await api.newAccountKey();
    const responses = await Promise.all(Array.from({ length: 20 }, () => rotate(key)));
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(201));
    const returned = responses.map((response) => response.body.secret);
    expect(new Set(returned).size).toBe(20);
    expect(returned).toContain(await currentSecret(key));
  });
});

describe('GET /v1/webhooks:getSharedSecret', () => {
  it('answers 404 in the error shape before a secret was generated', async () => {
    expectError(await getSecret(await api.newAccountKey()), 404);
  });

  it('answers 200 with exactly the generated {secret}', async () => {
    const key = await api.newAccountKey();
    const { secret } = (await rotate(key)).body;
    const response = await getSecret(key);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ secret });
  });

  it('returns the same secret on repeated calls', async () => {
    const key = await api.newAccountKey();
    await rotate(key);
    expect(await currentSecret(key)).toBe(await currentSecret(key));
  });
});
