import { statSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { openApiDocument } from '../../lib/openapi/document';
import { routeList } from '../../lib/routes';
import { describeInBrowser, launchChromium } from '../support/browser';
import { useLocalService } from '../support/local-service';
import { useTempDir } from '../support/temp-dir';

const service = useLocalService();
const screenshots = useTempDir('api-reference-');

describe('the API document over HTTP', () => {
  it('is served at /openapi.json without an API key, as generated', async () => {
    const response = await service.call('GET', '/openapi.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.body).toEqual(openApiDocument());
  });

  it('answers other methods with a 405 naming GET', async () => {
    const response = await service.call('POST', '/openapi.json', { body: {} });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
    expect(response.body).toMatchObject({ statusCode: 405, error: 'Method Not Allowed' });
  });
});

describeInBrowser('the API reference page in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('shows every operation and the notification, loading nothing from outside the server', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));

    const response = await page.goto(`${service.url()}/docs`);
    expect(response?.status()).toBe(200);
    await page.locator('.opblock').nth(routeList.length - 1).waitFor({ timeout: 20_000 });
    const file = path.join(screenshots(), 'docs.png');
    await page.screenshot({ path: file, fullPage: true });
    expect(statSync(file).size).toBeGreaterThan(50_000);

    const text = await page.innerText('body');
    expect(text).toContain('Webhooks API');
    for (const route of routeList) {
      expect(text).toContain(route.summary);
      expect(text).toContain(route.operationId);
    }
    expect(text).toContain('address_activity');
    expect(await page.locator('.opblock').count()).toBeGreaterThanOrEqual(routeList.length);
    expect(problems).toEqual([]);
    expect(requested.filter((url) => !url.startsWith(`${service.url()}/`) && !url.startsWith('data:'))).toEqual([]);
  }, 60_000);
});
