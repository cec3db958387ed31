import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CANDIDATES = [
  process.env.CHROMIUM_PATH,
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
];

/** A Chromium installed on the machine (Debian's `chromium` package in CI): playwright-core downloads none. */
export function installedChromium(): string | undefined {
  return CANDIDATES.find((candidate): candidate is string => !!candidate && existsSync(candidate));
}

/**
 * `describe` when a Chromium is installed. Without one the tests are skipped with a line saying so,
 * except where REQUIRE_BROWSER_TESTS is set (`.ci/run` installs Chromium and sets it): there a
 * missing browser fails.
 */
export function describeInBrowser(name: string, tests: () => void): void {
  if (installedChromium() || process.env.REQUIRE_BROWSER_TESTS) return describe(name, tests);
  console.warn(`Skipped "${name}": no Chromium found (install Debian's chromium package, or set CHROMIUM_PATH)`);
  describe.skip(name, tests);
}

/** Headless, with Chromium's own background traffic off: the page's requests are the only ones. */
export function launchChromium(): Promise<Browser> {
  const executablePath = installedChromium();
  if (!executablePath) throw new Error('No Chromium found: install Debian\'s chromium package, or set CHROMIUM_PATH');
  return chromium.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
