import type { Browser, Page } from 'playwright-core';
import { recordFollowerStatus } from '../../lib/store/chains';
import { lookAtBothWidths, signIn, watchPage, type PageWatch } from '../support/console-page';
import { describeInBrowser, launchChromium } from '../support/browser';
import { randomAccount, randomAddress, randomChecksummedAddress, withChecksumTypo, webhookInput } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { startReceiver } from '../support/receiver';
import { screenshotsOf } from '../support/screenshots';
import { until } from '../support/until';

const service = useLocalService();
const STALLED_SINCE = Date.now() - 3 * 60_000;
const screenshot = screenshotsOf(__filename);

const WEBHOOK_PAGE = /\/console\/webhooks\/([0-9a-f-]{36})$/;

describeInBrowser("the console's overview and webhooks pages in headless Chromium", () => {
  let browser: Browser;
  let page: Page;
  let key: string;
  let watch: PageWatch;

  /** 26 webhooks, one of them inactive: more than a page of the list (25). */
  const created: { id: string; name: string }[] = [];
  let inactive: { id: string; name: string };

  beforeAll(async () => {
    key = await service.keyFor(randomAccount());
    for (let index = 0; index < 26; index += 1) {
      const name = `Hook ${String(index).padStart(2, '0')} <b>bold</b>`;
      const answer = await service.call('POST', '/v1/webhooks', { key, body: webhookInput({ name }) });
      expect(answer.status).toBe(201);
      created.push({ id: answer.body.id, name });
    }
    inactive = created[0]!;
    expect((await service.call('DELETE', `/v1/webhooks/${inactive.id}`, { key })).body.status).toBe('inactive');
    // 43114 has no follower here: what one stuck on a block would have recorded (1 has none, not running).
    await recordFollowerStatus('43114', { state: 'stalled', stalledSince: STALLED_SINCE, lastError: { kind: 'timeout', since: STALLED_SINCE, at: Date.now() }, rpc: 'configured', traceMethod: 'trace_block', recordedAt: Date.now() });

    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    watch = watchPage(page);
    await signIn(page, `${service.url()}/console/`, key);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
  });

  beforeEach(() => watch.expectRefusals());
  afterEach(() => {
    expect(watch.problems).toEqual([]);
  });

  const lookAt = (name: string) => lookAtBothWidths(page, name, screenshot);

  const section = (name: string) => page.getByRole('region', { name, exact: true });

  it('shows the webhooks by status, the deliveries, the inactive webhooks and the chains', async () => {
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const counts = section('Webhooks');
    await counts.getByText('25', { exact: true }).waitFor();
    await counts.getByText('1', { exact: true }).waitFor();
    await section('Deliveries in the last 24 hours').getByText('Delivery attempts per hour', { exact: true }).waitFor();
    await section('Failing webhooks').getByText('No delivery attempt failed in the last 24 hours.').waitFor();
    const inactiveLink = section('Inactive webhooks').getByRole('link', { name: inactive.name, exact: true });
    await inactiveLink.waitFor();
    expect(await inactiveLink.getAttribute('href')).toBe(`/console/webhooks/${inactive.id}`);
    await section('Inactive webhooks').getByText(/^Deactivated by a call to the API, .+: /).waitFor();
    await section('Followed chains').getByRole('rowheader', { name: /\(43114\)/ }).waitFor();
    // A follower stuck on a block sees the head (the hosted status OK) and is shown stalled, since when and why.
    const stuck = section('Followed chains').getByRole('row', { name: /\(43114\)/ });
    await stuck.getByText('stalled', { exact: true }).waitFor();
    await stuck.getByText(/^since .+ \(\d+ min ago\)$/).waitFor();
    await stuck.getByText(/^timeout/).waitFor();
    await stuck.getByText('configured URL, trace_block', { exact: true }).waitFor();
    await section('Followed chains').getByRole('row', { name: /\(1\)/ }).getByText('not running', { exact: true }).waitFor();
    expect(await page.locator('main b').count()).toBe(0);
    await lookAt('overview-blocks');
  }, 60_000);

  it('lists the webhooks a page at a time, filtered by status', async () => {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    const rows = page.locator('tbody tr');
    await page.getByRole('link', { name: created[25]!.name, exact: true }).waitFor();
    expect(await rows.count()).toBe(25);
    await lookAt('webhooks-list');

    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByRole('link', { name: inactive.name, exact: true }).waitFor();
    expect(await rows.count()).toBe(1);
    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.getByRole('link', { name: created[25]!.name, exact: true }).waitFor();

    await page.getByLabel('Status').selectOption('inactive');
    await page.getByRole('link', { name: inactive.name, exact: true }).waitFor();
    await page.getByRole('link', { name: created[25]!.name, exact: true }).waitFor({ state: 'detached' });
    expect(await rows.count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Next page' }).count()).toBe(0);

    // The filter is in the URL: a reload keeps it, Back goes to the list unfiltered.
    expect(new URL(page.url()).search).toBe('?status=inactive');
    await page.reload();
    await page.getByRole('link', { name: inactive.name, exact: true }).waitFor();
    expect(await page.getByLabel('Status').inputValue()).toBe('inactive');
    expect(await rows.count()).toBe(1);
    await page.goBack();
    await page.getByRole('link', { name: created[25]!.name, exact: true }).waitFor();
    expect(await page.getByLabel('Status').inputValue()).toBe('');
  }, 60_000);

  it("shows the API's 400 messages beside the fields they name, then creates the webhook and opens its page", async () => {
    watch.expectRefusals(400);
    await page.goto(`${service.url()}/console/webhooks`);
    await page.getByRole('link', { name: 'Create webhook' }).click();
    await page.getByRole('heading', { level: 1, name: 'Create a webhook' }).waitFor();
    await page.getByLabel('Chain').locator('option[value="43114"]').waitFor({ state: 'attached' });
    const typo = withChecksumTypo(randomChecksummedAddress());
    const address = randomAddress();
    await page.getByLabel('Name', { exact: true }).fill('Made <i>here</i>');
    await page.getByLabel('URL', { exact: true }).fill('ftp://receiver.example.com');
    await page.getByLabel('Chain').selectOption('43114');
    await page.getByLabel('Addresses', { exact: true }).fill(`${address}, ${typo}\n0x1234`);
    await page.getByLabel('Include logs').check();
    await lookAt('webhook-create');
    await page.getByRole('button', { name: 'Create webhook' }).click();

    const url = page.getByLabel('URL', { exact: true });
    await page.locator('[aria-invalid="true"]').first().waitFor();
    expect(await url.getAttribute('aria-invalid')).toBe('true');
    // The first field named gets the focus, and its message is read with it.
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe(await url.getAttribute('id'));
    const addresses = page.getByLabel('Addresses', { exact: true });
    expect(await addresses.getAttribute('aria-invalid')).toBe('true');
    const addressMessages = await page.locator(`#${await addresses.getAttribute('id')}-error`).innerText();
    expect(addressMessages).toContain('0x1234');
    expect(addressMessages).toContain(typo);
    await page.getByRole('alert').filter({ hasText: 'The webhook was not created: 2 fields need a change' }).waitFor();
    expect(await page.getByRole('alert').count()).toBe(1);
    await lookAt('webhook-create-refused');

    await url.fill('https://receiver.example.com/made-here');
    await addresses.fill(`${address}\n${address}`);
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.waitForURL(WEBHOOK_PAGE);
    const id = WEBHOOK_PAGE.exec(page.url())![1]!;
    const stored = await service.call('GET', `/v1/webhooks/${id}`, { key });
    expect(stored.body).toMatchObject({
      name: 'Made <i>here</i>',
      url: 'https://receiver.example.com/made-here',
      chainId: '43114',
      includeLogs: true,
      includeInternalTxs: false,
      metadata: { addresses: [address], eventSignatures: [] },
    });
  }, 60_000);

  it('edits a webhook, sending only the fields that changed', async () => {
    watch.expectRefusals(400);
    const { id, name } = created[5]!;
    await page.goto(`${service.url()}/console/webhooks/${id}/edit`);
    await page.getByRole('heading', { level: 1, name: `Edit ${name}` }).waitFor();
    expect(await page.getByLabel('Chain').inputValue()).toContain('43114');
    expect(await page.getByLabel('Addresses', { exact: true }).count()).toBe(0);
    await page.getByLabel('Name', { exact: true }).fill('Renamed');
    await page.getByLabel('Event signatures').fill('0xabc');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const signatures = page.getByLabel('Event signatures');
    await page.locator(`#${await signatures.getAttribute('id')}-error`).getByText('0xabc', { exact: false }).waitFor();
    await lookAt('webhook-edit-refused');

    const signature = `0x${'ab'.repeat(32)}`;
    await signatures.fill(signature);
    const patch = page.waitForRequest((request) => request.method() === 'PATCH');
    await page.getByRole('button', { name: 'Save changes' }).click();
    expect(JSON.parse((await patch).postData()!)).toEqual({ name: 'Renamed', metadata: { eventSignatures: [signature] } });
    await page.waitForURL(`${service.url()}/console/webhooks/${id}`);
    expect((await service.call('GET', `/v1/webhooks/${id}`, { key })).body).toMatchObject({ name: 'Renamed', metadata: { eventSignatures: [signature] } });

    await page.goto(`${service.url()}/console/webhooks/${id}/edit`);
    await page.getByRole('heading', { level: 1, name: 'Edit Renamed' }).waitFor();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').getByText('Nothing changed').waitFor();
  }, 60_000);

  it('deactivates, activates and deletes a webhook for good from its page', async () => {
    const { id, name } = created[7]!;
    await page.goto(`${service.url()}/console/webhooks/${id}`);
    await page.getByRole('heading', { level: 1, name }).waitFor();
    await page.getByRole('button', { name: 'Deactivate' }).click();
    await page.getByRole('status').getByText('Webhook deactivated').waitFor();
    expect((await service.call('GET', `/v1/webhooks/${id}`, { key })).body.status).toBe('inactive');
    await page.getByRole('button', { name: 'Activate' }).click();
    await page.getByRole('status').getByText('Webhook activated').waitFor();
    expect((await service.call('GET', `/v1/webhooks/${id}`, { key })).body.status).toBe('active');

    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete this webhook for good?' });
    const confirm = dialog.getByRole('button', { name: 'Delete for good' });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel(`Type ${name} to confirm`).fill(name);
    await lookAt('webhook-delete');
    await confirm.click();
    await page.waitForURL(`${service.url()}/console/webhooks`);
    await page.getByRole('status').getByText(`Webhook ${name} was deleted for good.`).waitFor();
    // The notice came with the history entry, not in the URL: shown once, not again on reload.
    expect(new URL(page.url()).search).toBe('');
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    expect(await page.getByText(`Webhook ${name} was deleted for good.`).count()).toBe(0);
    expect((await service.call('GET', `/v1/webhooks/${id}`, { key })).status).toBe(404);
  }, 60_000);

  it('shows a failing webhook with its last failure and how its URL is doing', async () => {
    const receiver = await startReceiver(() => ({ status: 503, body: 'down' }));
    try {
      expect((await service.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key })).status).toBe(201);
      const name = 'Failing <i>hook</i>';
      const made = await service.call('POST', '/v1/webhooks', { key, body: webhookInput({ url: receiver.url, name }) });
      expect((await service.call('POST', `/v1/webhooks/${made.body.id}/test`, { key })).status).toBeLessThan(300);
      await receiver.waitFor(1);
      // The attempt is counted once it is recorded, just after the receiver answered.
      await until('the failing webhook is counted', 15_000, async () => (await service.call('GET', '/v1/stats', { key })).body, (stats) => stats.failingWebhooks.length > 0);

      await page.goto(`${service.url()}/console/`);
      const row = section('Failing webhooks').getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
      await row.waitFor();
      const cells = await row.getByRole('cell').allInnerTexts();
      expect(cells).toContain('503');
      expect(cells).toContain('failing');
      await lookAt('overview-failing');
    } finally {
      await receiver.close();
    }
  }, 60_000);
});
