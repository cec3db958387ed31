import type { Page } from 'playwright-core';
import { expectNoSeriousViolations } from './axe';

/** Chromium's console line for any answer of 4xx or 5xx: the answers themselves are checked instead. */
const FAILED_RESOURCE = /^Failed to load resource: the server responded with a status of \d{3}\b/;

export interface PageWatch {
  /** Every address the page asked for. */
  requests: string[];
  /** What a user would not want: uncaught exceptions, console errors, 5xx answers, 4xx answers not expected. */
  problems: string[];
  /** The 4xx statuses the steps from here on provoke on purpose (none by default); replaces the last call's. */
  expectRefusals(...statuses: number[]): void;
}

/** Watches a console page for the whole test: read `problems` at the end of each step. */
export function watchPage(page: Page): PageWatch {
  const requests: string[] = [];
  const problems: string[] = [];
  let expected = new Set<number>();
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !FAILED_RESOURCE.test(message.text())) problems.push(`console error: ${message.text()}`);
  });
  page.on('response', (response) => {
    const status = response.status();
    if (status >= 500 || (status >= 400 && !expected.has(status))) problems.push(`${status} answered ${response.request().method()} ${new URL(response.url()).pathname}`);
  });
  return {
    requests,
    problems,
    expectRefusals: (...statuses) => {
      expected = new Set(statuses);
    },
  };
}

/**
 * Resolves once nothing in main is loading: the console marks what stands in for content not yet
 * loaded with aria-busy="true" (ui/components.tsx's Loading; the bench waits on it too).
 * A function, not a string: the CSP refuses the eval that page.waitForFunction would make of a string.
 */
export const nothingLoading = (page: Page) => page.waitForFunction(() => !(globalThis as any).document.querySelector('main [aria-busy="true"]'));

/** Fills the sign-in form's key and submits it. */
export async function submitApiKey(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Opens `url` and signs in there with `key`; waiting for the page it leads to is the caller's. */
export async function signIn(page: Page, url: string, key: string): Promise<void> {
  await page.goto(url);
  await submitApiKey(page, key);
}

/** How wide the document is: at 360 px, anything more scrolls sideways. */
export const documentWidth = (page: Page) => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);

/**
 * An axe scan and a screenshot of the page at 1280 px, then a screenshot at 360 px, where nothing may
 * be wider than the screen; back to 1280 px after.
 */
export async function lookAtBothWidths(page: Page, name: string, screenshot: (page: Page, name: string) => Promise<string>): Promise<void> {
  await expectNoSeriousViolations(page, name);
  await screenshot(page, name);
  await page.setViewportSize({ width: 360, height: 800 });
  await screenshot(page, name);
  expect(await documentWidth(page)).toBeLessThanOrEqual(360);
  await page.setViewportSize({ width: 1280, height: 900 });
}
