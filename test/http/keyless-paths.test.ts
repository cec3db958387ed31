import { HEALTH_CHECK } from '../../lib/routes';
import { useLocalService } from '../support/local-service';

const service = useLocalService();

/** A request as a browser or a load balancer sends it: no API key, and no check against the API document, which these paths are outside of. */
async function get(path: string, method = 'GET') {
  const response = await fetch(`${service.url()}${path}`, { method });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe('the paths the gateway serves without an API key', () => {
  it('answers GET /health with 200 {"status":"ok"} as JSON', async () => {
    const health = await get(HEALTH_CHECK.path);
    expect(health.status).toBe(200);
    expect(health.headers.get('content-type')).toBe('application/json');
    expect(health.text).toBe('{"status":"ok"}');
  });

  it('answers other methods on /health with a 405 naming GET', async () => {
    const response = await get(HEALTH_CHECK.path, 'POST');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
    expect(JSON.parse(response.text)).toMatchObject({ statusCode: 405, error: 'Method Not Allowed' });
  });

  it('serves the API reference page at /docs/ as at /docs', async () => {
    const [page, withSlash] = [await get('/docs'), await get('/docs/')];
    expect(page.status).toBe(200);
    expect(withSlash.status).toBe(200);
    expect(withSlash.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(withSlash.text).toBe(page.text);
    expect(withSlash.text).toContain('<script src="/docs/swagger-ui-bundle.js">');
  });
});
