import { randomUUID } from 'node:crypto';
import { API_KEY_HEADER } from '../../lib/keys/authorize';
import { webhookInput } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { rawExchange } from '../support/raw-http';
import { expectError, UUID_PATTERN } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

const service = useLocalService();
const api = webhooksApi(service);

describe('routing and the error contract', () => {
  let key: string;
  beforeAll(async () => {
    key = await api.newAccountKey();
  });

  it.each([
    '/nothing-here',
    '/v1',
    '/v2/webhooks',
    '/v1/hooks',
    '/v1/webhooks/',
    `/v1/webhooks/${randomUUID()}/deliveries`,
    '/v1/webhooks:unknownAction',
    '/v1/webhooks:getsharedsecret',
  ])('answers 404 in the error shape for the unknown path %s', async (path) => {
    expectError(await api.call('GET', path, { key }), 404);
  });

  it('answers 404 for an unknown path whatever the method', async () => {
    expectError(await api.call('POST', '/v1/nothing-here', { key, body: {} }), 404);
  });

  it.each([
    ['PUT', '/v1/webhooks', ['GET', 'POST']],
    ['DELETE', '/v1/webhooks', ['GET', 'POST']],
    ['PUT', `/v1/webhooks/${randomUUID()}`, ['DELETE', 'GET', 'PATCH']],
    ['POST', `/v1/webhooks/${randomUUID()}`, ['DELETE', 'GET', 'PATCH']],
    ['GET', '/v1/webhooks:generateOrRotateSharedSecret', ['POST']],
    ['POST', '/v1/webhooks:getSharedSecret', ['GET']],
  ])('answers %s %s with 405 and an Allow header listing %j', async (method, path, allowed) => {
    const response = await api.call(method, path, { key });
    expectError(response, 405);
    const allow = (response.headers.get('allow') ?? '').split(',').map((part) => part.trim());
    expect(allow.sort()).toEqual(allowed);
  });

  it('gives a successful response a UUID x-request-id', async () => {
    const response = await api.call('GET', '/v1/webhooks', { key });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toMatch(UUID_PATTERN);
  });

  it('gives errors from the handlers and from the gateway a UUID x-request-id', async () => {
    const fromHandler = await api.call('GET', `/v1/webhooks/${randomUUID()}`, { key });
    const fromGateway = await api.call('GET', '/v1/unknown', { key });
    const unauthenticated = await api.call('GET', '/v1/webhooks');
    expect([fromHandler.status, fromGateway.status, unauthenticated.status]).toEqual([404, 404, 401]);
    for (const response of [fromHandler, fromGateway, unauthenticated]) {
      expect(response.headers.get('x-request-id')).toMatch(UUID_PATTERN);
    }
  });

  it('gives each request its own x-request-id', async () => {
    const responses = await Promise.all([1, 2, 3].map(() => api.call('GET', '/v1/webhooks', { key })));
    const ids = responses.map((response) => response.headers.get('x-request-id'));
    expect(new Set(ids).size).toBe(3);
  });

  it('marks every JSON answer nosniff: successes, errors from the handlers and the gateway, and /health', async () => {
    const responses = {
      success: await api.call('GET', '/v1/webhooks', { key }),
      fromHandler: await api.call('GET', `/v1/webhooks/${randomUUID()}`, { key }),
      fromGateway: await api.call('GET', '/v1/unknown', { key }),
      unauthenticated: await api.call('GET', '/v1/webhooks'),
      health: await fetch(`${service.url()}/health`),
    };
    for (const [name, response] of Object.entries(responses)) {
      expect({ name, type: response.headers.get('content-type'), nosniff: response.headers.get('x-content-type-options') }).toEqual({ name, type: 'application/json', nosniff: 'nosniff' });
    }
  });

  it('answers a success with content-type application/json', async () => {
    const response = await api.call('GET', '/v1/webhooks', { key });
    expect(response.headers.get('content-type')).toMatch(/^application\/json\b/);
  });

  it('reads a body sent in chunks, with no Content-Length', async () => {
    const input = webhookInput();
    const bytes = new TextEncoder().encode(JSON.stringify(input));
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(bytes.slice(0, 10));
        controller.enqueue(bytes.slice(10));
        controller.close();
      },
    });
    const response = await fetch(`${service.url()}/v1/webhooks`, {
      method: 'POST',
      headers: { [API_KEY_HEADER]: key, 'content-type': 'application/json' },
      body,
      duplex: 'half', // Node's fetch sends a stream body only half-duplex, as Transfer-Encoding: chunked
    } as RequestInit);
    expect(response.status).toBe(201);
    expect(((await response.json()) as { url: string }).url).toBe(input.url);
  });
});

/** The status, headers (lower-cased names) and JSON body of a raw HTTP/1.1 response. */
function parseRawResponse(raw: string) {
  const [head = '', body = ''] = raw.split('\r\n\r\n', 2);
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers = new Headers(headerLines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()] as [string, string]));
  return { statusLine, status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) };
}

describe("requests Node's HTTP parser refuses", () => {
  it('answers 431 in the error shape, with x-request-id, to headers over the size limit', async () => {
    const response = await api.call('GET', '/v1/webhooks', { key: await api.newAccountKey(), headers: { 'x-padding': 'p'.repeat(20_000) } });
    expect(expectError(response, 431)).toMatch(/larger than the limit of \d+ bytes/);
  });

  it('answers 431 in the error shape to a URL over the size limit', async () => {
    const response = await api.call('GET', `/v1/webhooks?pageToken=${'t'.repeat(20_000)}`, { key: await api.newAccountKey() });
    expectError(response, 431);
  });

  it.each([
    ['a malformed request line', 'NOT A REQUEST\r\n\r\n'],
    ['a header line without a colon', 'GET /v1/webhooks HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n'],
  ])('answers 400 in the error shape to %s', async (_, request) => {
    const response = parseRawResponse(await rawExchange(service.url(), request));
    expect(response.statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(response.headers.get('content-type')).toMatch(/^application\/json\b/);
    expect(response.headers.get('x-request-id')).toMatch(UUID_PATTERN);
    expect(response.body).toEqual({ message: 'Malformed HTTP request', statusCode: 400, error: 'Bad Request' });
  });
});
