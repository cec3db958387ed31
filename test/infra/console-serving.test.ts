import { readFileSync } from 'node:fs';
import path from 'node:path';
import { IMMUTABLE_CACHE_CONTROL } from '../../infra/console-headers';
import { useLocalService } from '../support/local-service';
import { rawExchange } from '../support/raw-http';

const service = useLocalService();

/** The headers every console response carries, written out here so that the test does not reuse the server's table. */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/** A request as a browser sends it for the console: no API key, redirects not followed. */
async function get(pathname: string, method = 'GET') {
  const response = await fetch(`${service.url()}${pathname}`, { method, redirect: 'manual' });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

function expectSecurityHeaders(headers: Headers) {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect({ name, value: headers.get(name) }).toEqual({ name, value });
}

/** The status line and body of a request sent byte for byte (fetch would normalize the path first). */
async function raw(target: string) {
  const response = await rawExchange(service.url(), `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  const [head = '', body = ''] = response.split('\r\n\r\n', 2);
  return { status: Number(head.split(' ', 2)[1]), body };
}

const PACKAGE_JSON = readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8');

describe('the console, served by the local gateway', () => {
  let index: string;
  let scripts: string[];
  let styles: string[];
  beforeAll(async () => {
    index = (await get('/console/')).text;
    scripts = [...index.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)].map((match) => match[1]!);
    styles = [...index.matchAll(/<link\b[^>]*\brel="stylesheet"[^>]*\bhref="([^"]+)"/g)].map((match) => match[1]!);
  });

  it('redirects / to /console/ (302) and /console to /console/ (301), with the console headers', async () => {
    for (const [pathname, status] of [['/', 302], ['/console', 301]] as const) {
      const response = await get(pathname);
      expect({ pathname, status: response.status, location: response.headers.get('location') }).toEqual({ pathname, status, location: '/console/' });
      expectSecurityHeaders(response.headers);
    }
  });

  it('answers /console/ with index.html, revalidated on every load, without an API key', async () => {
    const response = await get('/console/');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expectSecurityHeaders(response.headers);
    expect(response.text).toContain('<div id="app"></div>');
    expect((await get('/console/index.html')).text).toBe(response.text);
  });

  it('answers every extensionless path under /console/ with the same index.html (the app routes it)', async () => {
    for (const pathname of ['/console/webhooks', '/console/webhooks/0b6c8f1e-5d0a-4c8e-9d56-1f0e2a7b3c4d/deliveries', '/console/keys/', '/console/sign-in?next=%2Fconsole%2Fkeys']) {
      const response = await get(pathname);
      expect({ pathname, status: response.status, cacheControl: response.headers.get('cache-control') }).toEqual({ pathname, status: 200, cacheControl: 'no-cache' });
      expect(response.text).toBe(index);
      expectSecurityHeaders(response.headers);
    }
  });

  it('needs no inline script or style: every script is a file of its own under /console/assets/', async () => {
    expect(scripts.length).toBeGreaterThan(0);
    expect(index).not.toMatch(/<script\b(?![^>]*\bsrc=)[^>]*>/);
    expect(index).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
    for (const src of [...scripts, ...styles]) expect(src).toMatch(/^\/console\/assets\/[\w.-]+\.(js|css)$/);
    // Nothing in the scripts that the policy's script-src 'self' (no 'unsafe-eval') would refuse.
    for (const src of scripts) expect((await get(src)).text).not.toMatch(/\beval\(|\bnew Function\(/);
  });

  it('serves the hashed assets with their content types, cached for good', async () => {
    for (const [files, type] of [[scripts, 'text/javascript; charset=utf-8'], [styles, 'text/css; charset=utf-8']] as const) {
      for (const file of files) {
        const response = await get(file);
        expect({ file, status: response.status, type: response.headers.get('content-type') }).toEqual({ file, status: 200, type });
        expect(response.headers.get('cache-control')).toBe(IMMUTABLE_CACHE_CONTROL);
        expect(response.text.length).toBeGreaterThan(0);
        expectSecurityHeaders(response.headers);
      }
    }
  });

  it('answers a missing asset, or a missing file with an extension, 404 in the error shape', async () => {
    for (const pathname of ['/console/assets/index-missing.js', '/console/assets/missing', '/console/favicon.png']) {
      const response = await get(pathname);
      expect({ pathname, status: response.status, type: response.headers.get('content-type') }).toEqual({ pathname, status: 404, type: 'application/json' });
      expect(JSON.parse(response.text)).toEqual({ message: `No file at ${pathname} in the console`, statusCode: 404, error: 'Not Found' });
      expectSecurityHeaders(response.headers);
    }
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    for (const pathname of ['/console/', scripts[0]!]) {
      const [head, full] = [await get(pathname, 'HEAD'), await get(pathname)];
      expect(head.status).toBe(200);
      expect(head.text).toBe('');
      expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(full.text)));
      expect(head.headers.get('content-type')).toBe(full.headers.get('content-type'));
      expectSecurityHeaders(head.headers);
    }
  });

  it('answers other methods 405 naming GET and HEAD', async () => {
    for (const pathname of ['/', '/console/', '/console/webhooks', scripts[0]!]) {
      const response = await get(pathname, 'POST');
      expect({ pathname, status: response.status, allow: response.headers.get('allow') }).toEqual({ pathname, status: 405, allow: 'GET, HEAD' });
      expect(JSON.parse(response.text)).toMatchObject({ statusCode: 405, error: 'Method Not Allowed' });
      expectSecurityHeaders(response.headers);
    }
  });

  it.each([
    '/console/assets/../../package.json',
    '/console/assets/..%2f..%2fpackage.json',
    '/console/assets/%2e%2e/%2e%2e/package.json',
    '/console/%2E%2E%2F%2E%2E%2Fpackage.json',
    '/console/assets/..\\..\\package.json',
    '/console/assets/..%5c..%5cpackage.json',
    '/console/..%2f..%2fREADME',
    '/console/..%5c..%5cREADME',
    '/console/assets/index.js%00.css',
    '/console/%00',
    '/console/%E0%A4%A',
  ])('serves nothing outside the build for %s', async (target) => {
    const response = await raw(target);
    expect([400, 404]).toContain(response.status);
    expect(response.body).not.toContain('"name": "webhook-management-service"');
    expect(response.body).not.toContain('<div id="app">');
    expect(PACKAGE_JSON).toContain('"name": "webhook-management-service"');
  });

  it('opens no API path: the API still needs a key beside the keyless console', async () => {
    const response = await get('/v1/webhooks');
    expect(response.status).toBe(401);
    expect(response.headers.get('content-security-policy')).toBeNull();
  });
});
