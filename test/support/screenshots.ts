import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';

const ROOT = path.resolve(__dirname, '../..');

const announced = new Set<string>();

/**
 * Where one browser test file's screenshots go, kept after the run for a person (or CI's artifacts) to
 * look at: <SCREENSHOT_DIR, else test-output/console/ under the project root (git-ignored)>/<the file's
 * name>/, so that two files never write over each other's. Created on first use, and named once in
 * the test output.
 */
export function screenshotDirectory(testFile: string): string {
  const root = path.resolve(process.env.SCREENSHOT_DIR ?? path.join(ROOT, 'test-output', 'console'));
  const directory = path.join(root, path.basename(testFile).replace(/\.test\.ts$/, ''));
  mkdirSync(directory, { recursive: true });
  if (!announced.has(directory)) {
    announced.add(directory);
    console.log(`Screenshots of the console: ${directory}`);
  }
  return directory;
}

/**
 * The screenshot function of one test file (pass its `__filename`): each a full-page screenshot named
 * after the page and the viewport's width (`webhooks-1280.png`), answering its path.
 */
export function screenshotsOf(testFile: string): (page: Page, name: string) => Promise<string> {
  return async (page, name) => {
    const width = page.viewportSize()?.width ?? 0;
    const file = path.join(screenshotDirectory(testFile), `${name}-${width}.png`);
    await page.screenshot({ path: file, fullPage: true });
    return file;
  };
}
