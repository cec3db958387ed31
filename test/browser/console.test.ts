import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page, Response } from 'playwright-core';
import { CONSOLE_CONTENT_SECURITY_POLICY } from '../../infra/console-headers';
import { apiKeyId } from '../../lib/keys/api-keys';
import { expectNoSeriousViolations } from '../support/axe';
import { documentWidth, nothingLoading, submitApiKey, watchPage } from '../support/console-page';
import { describeInBrowser, launchChromium } from '../support/browser';
import { DEV_ACCOUNT, sendTransaction } from '../support/dev-chain';
import { randomAddress } from '../support/factories';
import { apiCaller, devChainUrl, freePort, startNpmStart, stopAfterAll, type NpmStart } from '../support/npm-start';
import { startReceiver, type Receiver } from '../support/receiver';
import { screenshotsOf } from '../support/screenshots';
import { useTempDir } from '../support/temp-dir';

const DEV_CHAIN_ID = '31337';
const ADDRESSES_IN_FILE = 25_000;
/** How long a delivery may take to show in the log that refreshes every 5 s on its own. */
const DELIVERY_SHOWS_WITHIN_MS = 30_000;

const temp = useTempDir('webhooks-console-');
const screenshot = screenshotsOf(__filename);
let running: NpmStart | undefined;
let receiver: Receiver | undefined;
/** What the receiver answers: the test makes it fail, then recover. */
let receiverStatus = 200;
stopAfterAll(
  () => running,
  () => receiver,
);

/** The page's h1 is shown and nothing on it is still loading: ready to be looked at. */
async function settled(page: Page, title: string | RegExp) {
  await page.getByRole('heading', { level: 1, name: title }).waitFor();
  await nothingLoading(page);
}

/** A screenshot and an accessibility scan of the page as it is now. */
async function lookAt(page: Page, name: string) {
  await screenshot(page, name);
  await expectNoSeriousViolations(page, name);
}

describeInBrowser('the console in Chromium, against npm start', () => {
  let browser: Browser;
  let url: string;
  let devKey: string;
  beforeAll(async () => {
    receiver = await startReceiver(() => ({ status: receiverStatus }));
    const dataDir = path.join(temp(), 'data');
    const ports = { PORT: String(await freePort()), DYNAMODB_PORT: String(await freePort()), DEV_CHAIN_PORT: String(await freePort()) };
    [running, browser] = await Promise.all([startNpmStart({ ...ports, DATA_DIR: dataDir, AUTHORIZER_CACHE_TTL_SECONDS: '0' }), launchChromium()]);
    url = running.url;
    // npm start writes the dev account's key to a file only its owner reads, and names the file.
    devKey = readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim();
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('signs in, follows a transaction to its delivery, retries a failure, rotates the secret, makes and revokes a key, signs out; every page passes axe and fits 360 px', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const watch = watchPage(page);
    /** Each page signed in, by its screenshot's name: opened again at 360 px wide at the end. */
    const pages: Record<string, string> = {};
    const lookAtPage = async (name: string) => {
      pages[name] = page.url();
      await lookAt(page, name);
    };

    // Sign in: a wrong key first (its 401 expected) stays at sign-in with the API's message.
    watch.expectRefusals(401);
    const response = (await page.goto(`${url}/console/`)) as Response;
    expect(response.status()).toBe(200);
    expect(response.headers()['content-security-policy']).toBe(CONSOLE_CONTENT_SECURITY_POLICY);
    await page.getByRole('heading', { level: 1, name: 'Webhooks console' }).waitFor();
    await lookAt(page, 'sign-in');
    const wrongKey = `whk_${randomBytes(32).toString('base64url')}`;
    const refusal = (await apiCaller(() => url, wrongKey)('GET', '/v1/webhooks')).body as { message: string };
    await submitApiKey(page, wrongKey);
    await page.getByRole('alert').filter({ hasText: refusal.message }).waitFor();
    expect(await page.getByRole('button', { name: 'Sign in' }).isVisible()).toBe(true);
    await submitApiKey(page, devKey);
    await settled(page, 'Overview');
    watch.expectRefusals();
    await lookAtPage('overview');

    // Create a webhook on the dev chain with the form, sending to a receiver on loopback.
    const watched = randomAddress();
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await settled(page, 'Webhooks');
    await lookAtPage('webhooks');
    await page.getByRole('link', { name: 'Create webhook' }).click();
    await page.getByLabel('Chain', { exact: true }).locator(`option[value="${DEV_CHAIN_ID}"]`).waitFor({ state: 'attached' });
    await settled(page, /Create/);
    await lookAtPage('webhook-create');
    await page.getByLabel('Name', { exact: true }).fill('Console E2E');
    await page.getByLabel('URL', { exact: true }).fill(receiver!.url);
    await page.getByLabel('Chain', { exact: true }).selectOption(DEV_CHAIN_ID);
    await page.getByLabel('Addresses', { exact: true }).fill(watched);
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await settled(page, 'Console E2E');
    const webhookId = /\/console\/webhooks\/([^/]+)$/.exec(new URL(page.url()).pathname)?.[1];
    const created = await apiCaller(() => url, devKey)('GET', `/v1/webhooks/${webhookId}`);
    expect(created.body).toMatchObject({ name: 'Console E2E', chainId: DEV_CHAIN_ID, url: receiver!.url, status: 'active' });
    await lookAtPage('webhook-settings');

    // 25 000 addresses from a file, sent in calls of 10 000 with a progress bar.
    await page.getByRole('link', { name: 'Addresses', exact: true }).click();
    await settled(page, 'Console E2E');
    await lookAtPage('webhook-addresses');
    const file = path.join(temp(), 'addresses.txt');
    writeFileSync(file, `${Array.from({ length: ADDRESSES_IN_FILE }, randomAddress).join('\n')}\n`);
    await page.getByLabel('Upload a file of addresses').setInputFiles(file);
    await page.getByRole('button', { name: 'Add addresses' }).click();
    await page.getByRole('status').filter({ hasText: 'Added 25,000 addresses' }).waitFor({ timeout: 60_000 });
    expect(await page.getByLabel('Progress', { exact: true }).evaluate((progress: any) => [progress.value, progress.max])).toEqual([ADDRESSES_IN_FILE, ADDRESSES_IN_FILE]);
    await screenshot(page, 'webhook-addresses-added');

    // A dev-chain transaction to the watched address: its delivery shows in the log on its own.
    await page.getByRole('link', { name: 'Deliveries', exact: true }).click();
    await settled(page, 'Console E2E');
    let loads = 0;
    page.on('load', () => (loads += 1));
    const receipt = await sendTransaction(devChainUrl(running!), { from: DEV_ACCOUNT, to: watched, value: 10n ** 15n });
    const txHash = receipt.transactionHash as string;
    const deliveryLink = page.getByRole('table').getByRole('link').first();
    await deliveryLink.waitFor({ timeout: DELIVERY_SHOWS_WITHIN_MS });
    expect(loads).toBe(0);
    expect(await page.getByRole('table').locator('tbody tr').first().locator('[data-label="Transaction"]').innerText()).toContain(`${txHash.slice(0, 6)}…${txHash.slice(-4)}`);
    await lookAtPage('webhook-deliveries');
    await deliveryLink.click();
    await settled(page, /^Delivery /);
    await page.getByRole('heading', { name: 'Body as sent' }).waitFor();
    expect(await page.getByRole('heading', { name: 'Attempts' }).isVisible()).toBe(true);
    expect(await page.locator('pre.payload').innerText()).toContain(txHash);
    await lookAtPage('delivery');

    // The receiver fails a test notification; once it answers 200 again, "Retry now" delivers it.
    receiverStatus = 500;
    await page.getByRole('link', { name: 'Console E2E', exact: true }).click();
    await settled(page, 'Console E2E');
    await page.getByRole('button', { name: 'Send test notification' }).click();
    await page.getByRole('link', { name: /^message / }).click();
    await settled(page, /^Delivery /);
    const attempts = page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: 'Status code', exact: true }) });
    await attempts.getByRole('cell', { name: '500', exact: true }).first().waitFor({ timeout: 20_000 });
    await screenshot(page, 'delivery-failed');
    receiverStatus = 200;
    await page.getByRole('button', { name: 'Retry now' }).click();
    await attempts.getByRole('cell', { name: '200', exact: true }).first().waitFor({ timeout: 20_000 });
    await page.locator('dl.properties').getByText('succeeded', { exact: true }).waitFor();
    await screenshot(page, 'delivery-retried');

    await page.getByRole('link', { name: 'Console E2E', exact: true }).click();
    await page.getByRole('link', { name: 'Backfills', exact: true }).click();
    await settled(page, 'Console E2E');
    await lookAtPage('webhook-backfills');

    // The shared secret: revealed, then rotated behind a dialog that explains the grace period.
    await page.getByRole('link', { name: 'Shared secret' }).click();
    await settled(page, 'Shared secret');
    await lookAtPage('secret');
    await page.getByRole('button', { name: 'Reveal secret' }).click();
    const secretBefore = await page.locator('code.secret-value').innerText();
    expect(secretBefore).toMatch(/^[0-9a-f]{64}$/);
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotateDialog = page.getByRole('dialog', { name: 'Rotate the shared secret?' });
    await rotateDialog.getByLabel('End the grace period at once').waitFor();
    await expectNoSeriousViolations(page, 'the rotate dialog');
    await rotateDialog.getByRole('button', { name: 'Rotate', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'The secret was rotated' }).waitFor();
    const secretAfter = await page.locator('code.secret-value').innerText();
    expect(secretAfter).toMatch(/^[0-9a-f]{64}$/);
    expect(secretAfter).not.toBe(secretBefore);
    await screenshot(page, 'secret-rotated');

    // A new key with a name, read from "New key", listed with its name, revoked by its id. A name that is one
    // word as long as the API allows wraps: the table keeps every column in view.
    expect((await apiCaller(() => url, devKey)('POST', '/v1/apiKeys', { name: 'k'.repeat(256) })).status).toBe(201);
    await page.getByRole('link', { name: 'API keys' }).click();
    await settled(page, 'API keys');
    expect(await page.locator('.table-scroll').evaluate((box) => box.scrollWidth <= box.clientWidth)).toBe(true);
    await lookAtPage('api-keys');
    await page.getByLabel('Name of the new key (optional)').fill('CI pipeline');
    await page.getByRole('button', { name: 'Create key' }).click();
    const newKey = await page.getByLabel('New key', { exact: true }).inputValue();
    expect(newKey).toMatch(/^whk_/);
    await screenshot(page, 'api-keys-created');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await page.getByLabel('New key', { exact: true }).count()).toBe(0);
    const newKeyId = apiKeyId(newKey);
    await page.getByRole('row').filter({ hasText: newKeyId }).filter({ hasText: 'CI pipeline' }).waitFor();
    expect(await page.getByLabel('Name of the new key (optional)').inputValue()).toBe('');
    await page.getByRole('button', { name: `Revoke key ${newKeyId}` }).click();
    await page.getByRole('dialog').getByRole('heading', { name: `Revoke key ${newKeyId} (CI pipeline)?` }).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke', exact: true }).click();
    await page.getByRole('status').filter({ hasText: `Key ${newKeyId} was revoked` }).waitFor();
    expect(await page.getByRole('button', { name: `Revoke key ${newKeyId}` }).count()).toBe(0);
    expect((await apiCaller(() => url, newKey)('GET', '/v1/webhooks')).status).toBe(401);
    await screenshot(page, 'api-keys-revoked');

    // Each page at 360 px wide: nothing wider than the screen. Opened by address, in the same tab.
    await page.setViewportSize({ width: 360, height: 780 });
    const overflowing: { name: string; scrollWidth: number }[] = [];
    const checkWidth = async (name: string) => {
      const scrollWidth = await documentWidth(page);
      if (scrollWidth > 360) overflowing.push({ name, scrollWidth });
    };
    for (const [name, address] of Object.entries(pages)) {
      const opened = (await page.goto(address)) as Response;
      expect(opened.headers()['content-security-policy']).toBe(CONSOLE_CONTENT_SECURITY_POLICY);
      await page.locator('h1').waitFor();
      await nothingLoading(page);
      await screenshot(page, name);
      await checkWidth(name);
    }

    // Sign out: back at sign-in, and the key is nowhere the browser keeps it, nor in any address asked for.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    await screenshot(page, 'sign-in');
    await checkWidth('sign-in');
    expect(overflowing).toEqual([]);
    const stored = (await page.evaluate('JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)])')) as string;
    const cookies = JSON.stringify(await context.cookies());
    for (const key of [devKey, wrongKey, newKey]) {
      expect(stored).not.toContain(key);
      expect(cookies).not.toContain(key);
      expect(watch.requests.filter((requested) => requested.includes(key) || requested.includes(encodeURIComponent(key)))).toEqual([]);
      expect(running!.output()).not.toContain(key);
    }
    expect(watch.problems).toEqual([]);
    await context.close();
  }, 150_000);
});
