import { routeTable } from '../../infra/local/route-table';
import { routeList, routes } from '../../lib/routes';

const match = routeTable(routeList);
const webhookId = '0190a000-0000-7000-8000-000000000000';

describe('routeTable on the service routes', () => {
  it('finds POST /v1/webhooks:generateOrRotateSharedSecret, whose colon is part of one literal path part', () => {
    expect(match('POST', '/v1/webhooks:generateOrRotateSharedSecret')).toEqual({
      kind: 'found',
      route: routes.generateOrRotateSharedSecret,
      pathParameters: {},
    });
  });

  it('finds GET /v1/webhooks:getSharedSecret', () => {
    expect(match('GET', '/v1/webhooks:getSharedSecret')).toEqual({ kind: 'found', route: routes.getSharedSecret, pathParameters: {} });
  });

  it('does not read a colon path as /v1/webhooks with a suffix', () => {
    expect(match('GET', '/v1/webhooks:listEverything')).toEqual({ kind: 'not-found' });
  });

  it('does not read a colon path as /v1/webhooks/{id}', () => {
    expect(match('GET', '/v1/webhooks:getSharedSecret/extra')).toEqual({ kind: 'not-found' });
  });

  it('finds GET and POST /v1/webhooks as list and create', () => {
    expect(match('GET', '/v1/webhooks')).toMatchObject({ kind: 'found', route: routes.listWebhooks });
    expect(match('POST', '/v1/webhooks')).toMatchObject({ kind: 'found', route: routes.createWebhook });
  });

  it.each([
    ['GET', routes.getWebhook],
    ['PATCH', routes.updateWebhook],
    ['DELETE', routes.deleteWebhook],
  ])('finds %s /v1/webhooks/{id} and captures the id', (method, route) => {
    expect(match(method, `/v1/webhooks/${webhookId}`)).toEqual({ kind: 'found', route, pathParameters: { id: webhookId } });
  });

  it('captures {id} percent-decoded', () => {
    expect(match('GET', '/v1/webhooks/abc%20def%3A1')).toMatchObject({ kind: 'found', pathParameters: { id: 'abc def:1' } });
  });

  it('captures an encoded slash inside {id} as part of the one path part', () => {
    expect(match('GET', '/v1/webhooks/a%2Fb')).toMatchObject({ kind: 'found', route: routes.getWebhook, pathParameters: { id: 'a/b' } });
  });

  it('does not match {id} to an empty path part', () => {
    expect(match('GET', '/v1/webhooks/')).toEqual({ kind: 'not-found' });
  });

  it('matches a percent-encoded literal part like the plain one', () => {
    expect(match('GET', '/v1/webhooks%3AgetSharedSecret')).toEqual({ kind: 'found', route: routes.getSharedSecret, pathParameters: {} });
  });

  it('matches nothing for malformed percent-encoding', () => {
    expect(match('GET', '/v1/webhooks/%E0%A4%A')).toEqual({ kind: 'not-found' });
  });

  it('answers method-not-allowed listing GET and POST for PUT /v1/webhooks', () => {
    const result = match('PUT', '/v1/webhooks');
    expect(result.kind).toBe('method-not-allowed');
    expect(result.kind === 'method-not-allowed' && [...result.allowed].sort()).toEqual(['GET', 'POST']);
  });

  it('answers method-not-allowed listing GET, PATCH and DELETE for POST /v1/webhooks/{id}', () => {
    const result = match('POST', `/v1/webhooks/${webhookId}`);
    expect(result.kind).toBe('method-not-allowed');
    expect(result.kind === 'method-not-allowed' && [...result.allowed].sort()).toEqual(['DELETE', 'GET', 'PATCH']);
  });

  it('answers method-not-allowed listing only GET for POST /v1/webhooks:getSharedSecret', () => {
    expect(match('POST', '/v1/webhooks:getSharedSecret')).toEqual({ kind: 'method-not-allowed', allowed: ['GET'] });
  });

  it('answers method-not-allowed listing only POST for GET /v1/webhooks:generateOrRotateSharedSecret', () => {
    expect(match('GET', '/v1/webhooks:generateOrRotateSharedSecret')).toEqual({ kind: 'method-not-allowed', allowed: ['POST'] });
  });

  it.each(['/', '/v1', '/v2/webhooks', '/v1/webhook', '/V1/webhooks', `/v1/webhooks/${webhookId}/unknown`, '/v1/webhooks//x'])(
    'answers not-found for the unknown path %s',
    (path) => {
      expect(match('GET', path)).toEqual({ kind: 'not-found' });
    },
  );

  it.each(['/v1/webhooks/%', '/v1/webhooks/%E0%A4%A', '/v1/webhooks/%zz', '/v1/%C3%28'])(
    'answers not-found for the malformed percent-encoding %s',
    (path) => {
      expect(match('GET', path)).toEqual({ kind: 'not-found' });
    },
  );
});

describe('routeTable on routes that overlap', () => {
  // Listed first, the route with a parameter would win on list order alone.
  const overlapping = [
    { method: 'GET', path: '/items/{id}' },
    { method: 'GET', path: '/items/latest' },
    { method: 'DELETE', path: '/items/{id}' },
  ] as const;
  const matchOverlapping = routeTable([...overlapping]);

  it('prefers the path without parameters, as API Gateway does', () => {
    expect(matchOverlapping('GET', '/items/latest')).toEqual({ kind: 'found', route: overlapping[1], pathParameters: {} });
  });

  it('prefers it when the request percent-encodes a literal part too', () => {
    expect(matchOverlapping('GET', '/items/l%61test')).toEqual({ kind: 'found', route: overlapping[1], pathParameters: {} });
  });

  it('still gives other paths to the route with the parameter', () => {
    expect(matchOverlapping('GET', '/items/7')).toEqual({ kind: 'found', route: overlapping[0], pathParameters: { id: '7' } });
  });

  it('takes another method on the same path to the route with the parameter', () => {
    expect(matchOverlapping('DELETE', '/items/latest')).toEqual({ kind: 'found', route: overlapping[2], pathParameters: { id: 'latest' } });
  });
});
