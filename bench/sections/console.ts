import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { ensureConsoleBuilt } from '../../infra/console-build';
import { installedChromium, launchChromium } from '../../test/support/browser';
import { signIn } from '../../test/support/console-page';
import { startBenchService } from '../support/service';
import { atMost, figure, median, type BenchOptions, type Figure } from '../support/report';

const SECTION = '14 console';
/** The budgets: JavaScript the browser downloads, and the overview's time to interactive. */
const JS_BUDGET_KB = 250;
const INTERACTIVE_BUDGET_MS = 1000;

/**
 * What the console costs a browser: its JavaScript, gzipped as a server or CDN would send it, and
 * how long the overview takes from navigation until it is interactive (its heading focused, every
 * block loaded), in headless Chromium against `npm start`. Beside it, the floor: the sign-in page,
 * the same files with no API call.
 */
export async function consoleFigures({ quick, progress }: BenchOptions, storeEnv: Record<string, string>): Promise<Figure[]> {
  const distDir = await ensureConsoleBuilt();
  const figures = await shippedBytes(distDir);
  if (!installedChromium()) {
    progress('console: no Chromium found (Debian package chromium, or CHROMIUM_PATH): the interactive figure is not measured');
    return figures;
  }
  const bench = await startBenchService(storeEnv);
  const browser = await launchChromium();
  try {
    const runs = quick ? 5 : 15;
    const url = `${bench.service.url}/console/`;
    const floor = await timesTo(browser, url, runs, async () => undefined, signInInteractive);
    const overview = await timesTo(browser, url, runs, (page) => signedIn(page, url, bench.key), overviewInteractive);
    progress(`console: overview interactive median ${median(overview).toFixed(0)} ms, sign-in page ${median(floor).toFixed(0)} ms`);
    figures.push(
      figure(SECTION, 'overview interactive, median', Math.round(median(overview)), 'ms', atMost(INTERACTIVE_BUDGET_MS, ' ms')(median(overview)), `max ${Math.round(Math.max(...overview))} ms over ${runs} loads; ${(median(overview) / median(floor)).toFixed(2)}x the sign-in page (${Math.round(median(floor))} ms), 20 webhooks`),
    );
  } finally {
    await browser.close();
    await bench.service.stop();
  }
  return figures;
}

async function shippedBytes(distDir: string): Promise<Figure[]> {
  const assets = path.join(distDir, 'assets');
  const files = await readdir(assets);
  const gzipped = async (extension: string) => {
    let total = 0;
    for (const file of files.filter((name) => name.endsWith(extension))) total += gzipSync(await readFile(path.join(assets, file)), { level: 9 }).length;
    return total / 1024;
  };
  const js = await gzipped('.js');
  const css = await gzipped('.css');
  return [
    figure(SECTION, 'JavaScript shipped, gzipped', Number(js.toFixed(1)), 'KB', atMost(JS_BUDGET_KB, ' KB')(js), `every script of the build; CSS ${css.toFixed(1)} KB more`),
  ];
}

/** Milliseconds from navigation start to `interactive`, over fresh loads of one tab (its sessionStorage kept). */
async function timesTo(browser: Browser, url: string, runs: number, prepare: (page: Page) => Promise<void>, interactive: (page: Page) => Promise<number>): Promise<number[]> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  try {
    await prepare(page);
    const times: number[] = [];
    // One load first, uncounted: the browser's cache as a returning user has it.
    for (let run = 0; run <= runs; run += 1) {
      await page.goto(url, { waitUntil: 'commit' });
      const ms = await interactive(page);
      if (run > 0) times.push(ms);
    }
    return times;
  } finally {
    await page.close();
  }
}

async function signedIn(page: Page, url: string, key: string): Promise<void> {
  await signIn(page, url, key);
  await page.getByRole('link', { name: 'Overview' }).waitFor();
}

/** The little of the DOM the wait below reads: this file is compiled without the DOM's types. */
interface PageElement {
  tagName: string;
  textContent: string | null;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): Iterable<PageElement>;
}
interface PageGlobals {
  document: { activeElement: PageElement | null; querySelector(selector: string): PageElement | null };
  performance: { now(): number };
}

/**
 * Waits in the page until its h1 reading `heading` has focus and, with `loaded`, nothing in main is
 * loading; answers performance.now() then: milliseconds since the navigation started. (A function,
 * not a string: the console's CSP forbids evaluating strings.)
 */
const focusedHeadingAt = (page: Page, heading: string, loaded: boolean) =>
  page
    .waitForFunction(
      ([text, whole]) => {
        const { document, performance } = globalThis as unknown as PageGlobals;
        const active = document.activeElement;
        if (!active || active.tagName !== 'H1' || active.textContent !== text) return false;
        if (whole) {
          const main = document.querySelector('main');
          if (!main || main.querySelector('[aria-busy="true"]')) return false;
          if ([...main.querySelectorAll('[role="status"]')].some((status) => (status.textContent ?? '').trim().endsWith('…'))) return false;
        }
        return performance.now();
      },
      [heading, loaded] as const,
      { polling: 'raf', timeout: 30_000 },
    )
    .then((handle) => handle.jsonValue() as Promise<number>);

const signInInteractive = (page: Page) => focusedHeadingAt(page, 'Webhooks console', false);
const overviewInteractive = (page: Page) => focusedHeadingAt(page, 'Overview', true);
