import type { Browser, Page } from 'playwright-core';
import { createApiKey } from '../../lib/keys/api-keys';
import { updateWebhookItem } from '../../lib/store/webhooks';
import { nothingLoading, signIn, watchPage, type PageWatch } from '../support/console-page';
import { describeInBrowser, launchChromium } from '../support/browser';
import { randomAccount, webhookInput } from '../support/factories';
import { useLocalService } from '../support/local-service';

const service = useLocalService();

/** A name that reads as the genuine one, stored before the API refused what hides in it. */
const LOOKALIKE = 'npm start\u200b';
const LOOKALIKE_SHOWN = 'npm start\\u200b';
const TURNED_DESCRIPTION = 'pays invoice \u202egnp.exe';
const TURNED_DESCRIPTION_SHOWN = 'pays invoice \\u202egnp.exe';

describeInBrowser('names stored before the API refused hidden characters, in the console', () => {
  let browser: Browser;
  let page: Page;
  let watch: PageWatch;
  let lookalikeId: string;

  beforeAll(async () => {
    const account = randomAccount();
    const key = await service.keyFor(account);
    await createApiKey(account, { name: 'npm start' });
    await createApiKey(account, { name: LOOKALIKE });
    for (const name of ['npm start', 'placeholder']) {
      const created = await service.call('POST', '/v1/webhooks', { key, body: webhookInput({ name, chainId: '43114' }) });
      expect(created.status).toBe(201);
      lookalikeId = created.body.id;
    }
    // Past the API's validation: what a webhook created before the rule holds.
    await updateWebhookItem(account, lookalikeId, { name: LOOKALIKE, description: TURNED_DESCRIPTION });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    watch = watchPage(page);
    await signIn(page, `${service.url()}/console/webhooks`, key);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
  });

  afterEach(() => {
    expect(watch.problems).toEqual([]);
  });

  /** What the page's main region says holds none of the hidden characters themselves. */
  async function expectNothingHidden() {
    expect(await page.locator('main').innerText()).not.toMatch(/[\u200b\u202e]/u);
  }

  it('shows a webhook name with a zero-width space escaped in the webhook list, apart from the genuine one', async () => {
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    await nothingLoading(page);
    await page.getByRole('link', { name: LOOKALIKE_SHOWN, exact: true }).waitFor();
    await page.getByRole('link', { name: 'npm start', exact: true }).waitFor();
    await expectNothingHidden();
  });

  it("shows the webhook's name and its description with a right-to-left override escaped on its page", async () => {
    await page.getByRole('link', { name: LOOKALIKE_SHOWN, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: LOOKALIKE_SHOWN }).waitFor();
    await nothingLoading(page);
    await page.getByText(TURNED_DESCRIPTION_SHOWN, { exact: true }).waitFor();
    await expectNothingHidden();
  });

  it('shows a key name with a zero-width space escaped on the keys page, apart from the genuine one', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    await nothingLoading(page);
    await page.getByRole('cell', { name: LOOKALIKE_SHOWN, exact: true }).waitFor();
    await page.getByRole('cell', { name: 'npm start', exact: true }).waitFor();
    await expectNothingHidden();
  });
});
