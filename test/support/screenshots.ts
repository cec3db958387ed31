import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';

const ROOT = path.resolve(__dirname, '../..');

let announced: string | undefined;

/**
 * Where the browser tests' screenshots go, kept after the run for a person (or CI's artifacts) to
 * look at: SCREENSHOT_DIR, else test-output/console/ under the project root (git-ignored).
 * Created on first use, and named once in the test output.
 */
export function screenshotDirectory(): string {
  const directory = path.resolve(process.env.SCREENSHOT_DIR ?? path.join(ROOT, 'test-output', 'console'));
  mkdirSync(directory, { recursive: true });
  if (announced !== directory) {
    announced = directory;
    console.log(`Screenshots of the console: ${directory}`);
  }
  return directory;
}

/** A full-page screenshot named after the page and the viewport's width (`webhooks-1280.png`); returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  const width = page.viewportSize()?.width ?? 0;
  const file = path.join(screenshotDirectory(), `${name}-${width}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
