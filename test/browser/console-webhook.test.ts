import type { Browser, Page, Request } from 'playwright-core';
import { lookAtBothWidths, signIn, watchPage, type PageWatch } from '../support/console-page';
import { describeInBrowser, launchChromium } from '../support/browser';
import { devChainSettings } from '../../lib/config/chains';
import { backfillCalls } from '../support/backfills';
import { useDevChain } from '../support/dev-chain';
import { randomAccount, randomAddress, webhookInput } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { startReceiver, type Receiver } from '../support/receiver';
import { screenshotsOf } from '../support/screenshots';

const DEV_CHAIN_ID = '31337';
const screenshot = screenshotsOf(__filename);
const chain = useDevChain(DEV_CHAIN_ID);
/** Lower than the 10 000 the console assumes: it learns this limit from the API's 400. */
const ADDRESSES_PER_CALL = 4000;
// A failing message is out of retries in about a second; a backfill of 150 empty blocks runs for
// seconds, long enough to be seen running and cancelled.
const service = useLocalService(
  {
    DELIVERY_RETRY_SCHEDULE: '0.2,0.4,0.6',
    DELIVERY_TIMEOUT_SECONDS: '2',
    BACKFILL_RPC_REQUESTS_PER_SECOND: '10',
    MAX_ADDRESSES_PER_CALL: String(ADDRESSES_PER_CALL),
  },
  () => ({ chains: [devChainSettings(DEV_CHAIN_ID, chain.rpcUrl())] }),
);

/** What the receiver answers while failing: markup that must show as text, never run. */
const HOSTILE_RESPONSE = '<img src=x onerror="window.__injected=true"><script>window.__injected=true</script>';

describeInBrowser("the console's webhook pages in headless Chromium", () => {
  let browser: Browser;
  let page: Page;
  let receiver: Receiver;
  let failing = true;
  let key: string;
  let webhookId: string;
  let retriedMessageId: string;
  let watch: PageWatch;

  beforeAll(async () => {
    receiver = await startReceiver(() => (failing ? { status: 500, headers: { 'content-type': 'text/html' }, body: HOSTILE_RESPONSE } : { status: 200 }));
    key = await service.keyFor(randomAccount());
    expect((await service.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key })).status).toBe(201);
    const created = await service.call('POST', '/v1/webhooks', {
      key,
      body: webhookInput({ url: receiver.url, chainId: '43114', name: 'Treasury <b>watch</b>', metadata: { addresses: [randomAddress()] } }),
    });
    expect(created.status).toBe(201);
    webhookId = created.body.id;
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    watch = watchPage(page);
    await signIn(page, `${service.url()}/console/webhooks/${webhookId}`, key);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
  });

  beforeEach(() => watch.expectRefusals());
  afterEach(() => {
    expect(watch.problems).toEqual([]);
  });

  const tab = (name: string) => page.getByRole('navigation', { name: 'Webhook sections' }).getByRole('link', { name, exact: true });

  const lookAt = (name: string) => lookAtBothWidths(page, name, screenshot);

  it('shows the settings with the name as text, the tabs, and the 7-day charts', async () => {
    await page.getByRole('heading', { level: 1, name: 'Treasury <b>watch</b>' }).waitFor();
    expect(await page.locator('h1 b').count()).toBe(0);
    expect(await tab('Settings').getAttribute('aria-current')).toBe('page');
    const properties = page.locator('dl.properties');
    await expect(properties.innerText()).resolves.toContain(webhookId);
    await expect(properties.innerText()).resolves.toContain(receiver.url);
    await page.getByText('Delivery attempts per hour', { exact: true }).waitFor();
    await page.getByText('Latency per hour', { exact: true }).waitFor();
    await lookAt('webhook-settings');

    await page.getByRole('button', { name: 'Deactivate' }).click();
    await page.locator('.webhook-summary .badge-inactive').waitFor();
    // The settings say when and why, from the webhook's statistics.
    await properties.getByText(/^Deactivated by a call to the API, .+: /).waitFor();
    await page.getByRole('button', { name: 'Activate' }).click();
    await page.locator('.webhook-summary .badge-active').waitFor();
    expect(await page.getByRole('link', { name: 'Edit' }).getAttribute('href')).toBe(`/console/webhooks/${webhookId}/edit`);
  }, 60_000);

  it('sends a test notification, shows its failed attempts with the response as text, and retries it', async () => {
    await page.getByRole('button', { name: 'Send test notification' }).click();
    const link = page.getByRole('status').getByRole('link', { name: /^message / });
    await link.waitFor();
    const messageId = (await link.innerText()).replace('message ', '');
    retriedMessageId = messageId;
    await receiver.waitFor(4);
    await link.click();

    await page.getByRole('heading', { level: 1, name: `Delivery ${messageId}` }).waitFor();
    await page.getByRole('heading', { name: 'Body as sent' }).waitFor();
    await expect(page.locator('pre.payload').innerText()).resolves.toContain(`"messageId": "${messageId}"`);
    // Pending until the schedule runs out; the page refreshes on its own until the message has failed.
    await page.locator('dd .badge-failed').waitFor({ timeout: 20_000 });
    await page.getByRole('heading', { name: 'Attempts' }).waitFor();
    expect(await page.locator('td.response-body').first().innerText()).toContain('<script>window.__injected=true</script>');
    expect(await page.evaluate(() => (globalThis as any).__injected)).toBeUndefined();
    await lookAt('webhook-delivery');

    // A message out of retries deactivates its webhook: the retry is refused (400) with the API's reason.
    watch.expectRefusals(400);
    await page.getByRole('button', { name: 'Retry now' }).click();
    await page.getByRole('alert').filter({ hasText: 'is inactive' }).waitFor();
    expect((await service.call('PATCH', `/v1/webhooks/${webhookId}`, { key, body: { status: 'active' } })).status).toBe(200);
    failing = false;
    await page.getByRole('button', { name: 'Retry now' }).click();
    await page.locator('dd .badge-succeeded').waitFor({ timeout: 20_000 });
    expect(await page.locator('tbody tr').count()).toBe(5);
    expect(await page.locator('tbody tr').last().innerText()).toContain('manual');
  }, 60_000);

  it('lists the deliveries, announces a new one on its own, and filters them by status', async () => {
    await page.getByRole('link', { name: 'Deliveries', exact: true }).first().click();
    expect(await tab('Deliveries').getAttribute('aria-current')).toBe('page');
    await page.getByText('Refreshes every 5 s').waitFor();
    await page.getByRole('link', { name: retriedMessageId }).waitFor();
    expect(await page.locator('tbody tr').count()).toBe(1);

    const sent = await service.call('POST', `/v1/webhooks/${webhookId}/test`, { key });
    expect(sent.status).toBe(202);
    await page.getByRole('status').filter({ hasText: '1 new delivery' }).waitFor({ timeout: 20_000 });
    await page.getByRole('link', { name: sent.body.messageId }).waitFor();

    await page.getByLabel('Status').selectOption('failed');
    await page.getByText('No failed deliveries on this page.').waitFor();
    await page.getByLabel('Status').selectOption('succeeded');
    await page.locator('tbody tr').nth(1).waitFor();
    await lookAt('webhook-deliveries');

    await page.getByLabel('Failed since').fill('2020-01-01T00:00');
    await page.getByRole('button', { name: 'Recover' }).click();
    await page.getByRole('status').filter({ hasText: '0 failed messages queued again.' }).waitFor();
  }, 60_000);

  it("adds addresses from a file in calls of the stage's limit with progress, skipping what is not an address, and removes pasted ones", async () => {
    // The first call, of 10 000, is refused with the 400 naming the stage's limit; the rest go in calls of it.
    watch.expectRefusals(400);
    const callSizes: number[] = [];
    const countCall = (request: Request) => {
      if (request.method() === 'PATCH' && request.url().endsWith('/addresses')) callSizes.push(JSON.parse(request.postData()!).addresses.length);
    };
    page.on('request', countCall);
    await tab('Addresses').click();
    await page.getByText('1 address in all.').waitFor();
    const addresses = Array.from({ length: 10_050 }, () => randomAddress());
    const file = ['address', ...addresses.map((address, index) => (index % 2 ? address.toUpperCase().replace('0X', '0x') : `"${address}"`)), 'not-an-address;0x12'].join('\n');
    await page.getByLabel('Upload a file of addresses').setInputFiles({ name: 'addresses.csv', mimeType: 'text/csv', buffer: Buffer.from(file) });
    await page.getByText('10,050 addresses to send').waitFor();
    await page.getByText('3 entries are not an address').waitFor();
    await page.getByRole('button', { name: 'Add addresses' }).click();
    await page.getByRole('status').filter({ hasText: 'Added 10,050 addresses' }).waitFor({ timeout: 150_000 });
    expect(await page.getByLabel('Progress').getAttribute('value')).toBe('10050');
    await page.getByText('10,051 addresses in all, 100 a page.').waitFor();
    page.off('request', countCall);
    expect(callSizes).toEqual([10_000, ADDRESSES_PER_CALL, ADDRESSES_PER_CALL, 10_050 - 2 * ADDRESSES_PER_CALL]);
    await lookAt('webhook-addresses');

    await page.getByLabel('Addresses to add or remove').fill(`${addresses[0]}, ${addresses[1]}\n${addresses[0]}`);
    await page.getByRole('button', { name: 'Remove addresses' }).click();
    await page.getByRole('status').filter({ hasText: 'Removed 2 addresses' }).waitFor();
    await page.getByText('10,049 addresses in all, 100 a page.').waitFor();
  }, 200_000);

  it("asks for a backfill on a chain without a checkpoint and shows the API's refusal", async () => {
    watch.expectRefusals(400);
    await tab('Backfills').click();
    await page.getByText('No backfills yet.').waitFor();
    await page.getByLabel('From block').fill('1');
    await page.getByRole('button', { name: 'Start backfill' }).click();
    await page.getByRole('alert').filter({ hasText: 'Chain 43114 is not followed yet' }).waitFor();
  }, 60_000);

  it('starts a backfill on the dev chain, shows a 400 beside its field, watches it run and cancels it', async () => {
    watch.expectRefusals(400);
    await chain.rpc('anvil_mine', ['0xc8']);
    const checkpoint = await backfillCalls(service, DEV_CHAIN_ID).checkpointAtLeast(200);
    const created = await service.call('POST', '/v1/webhooks', { key, body: webhookInput({ url: receiver.url, chainId: DEV_CHAIN_ID, name: 'Dev chain' }) });
    expect(created.status).toBe(201);
    await page.goto(`${service.url()}/console/webhooks/${created.body.id}/backfills`);
    await page.getByText(`Optional: by default the chain's checkpoint, block ${checkpoint.toLocaleString('en-US')}.`).waitFor();

    await page.getByLabel('From block').fill(String(checkpoint - 150));
    await page.getByLabel('To block').fill(String(checkpoint + 1000));
    await page.getByRole('button', { name: 'Start backfill' }).click();
    await page.locator('.field-error').filter({ hasText: `must be at most ${checkpoint}` }).waitFor();
    expect(await page.getByLabel('To block').getAttribute('aria-invalid')).toBe('true');

    await page.getByLabel('To block').fill('');
    await page.getByRole('button', { name: 'Start backfill' }).click();
    const started = page.getByRole('status').filter({ hasText: /^Backfill .+ started\.$/ });
    await started.waitFor();
    const backfillId = (await started.innerText()).replace(/^Backfill (.+) started\.$/, '$1');
    await page.locator('tbody .badge-running').waitFor();
    await page.getByText('Refreshes every 3 s while a backfill runs.').waitFor();
    await lookAt('webhook-backfills');

    await page.getByRole('button', { name: `Cancel backfill ${backfillId}` }).click();
    await page.locator('tbody .badge-cancelled').waitFor();
    expect(await page.getByRole('button', { name: `Cancel backfill ${backfillId}` }).count()).toBe(0);
  }, 90_000);
});
