import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';

/** The impacts a page may not have: the bar ("no serious or critical violation"). */
const BLOCKING_IMPACTS = new Set(['serious', 'critical']);

export interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  helpUrl: string;
  /** The CSS selectors of the elements that violate the rule. */
  targets: string[];
}

let axeSource: string | undefined;

/**
 * axe-core's scan of the page as it is now, keeping the serious and critical violations. The page's
 * Content-Security-Policy refuses an injected <script> (page.addScriptTag): axe is evaluated through
 * the DevTools protocol instead, which the CSP does not govern.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(path.join(path.dirname(require.resolve('axe-core')), 'axe.min.js'), 'utf8');
  // A navigation within the single-page app keeps the window, and axe with it.
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const { axe, document } = globalThis as any;
    const results = await axe.run(document, { resultTypes: ['violations'] });
    return (results.violations as any[]).map((violation) => ({
      id: violation.id as string,
      impact: (violation.impact ?? 'unknown') as string,
      help: violation.help as string,
      helpUrl: violation.helpUrl as string,
      targets: (violation.nodes as any[]).map((node) => (node.target as unknown[]).join(' ')),
    }));
  });
  return violations.filter((violation) => BLOCKING_IMPACTS.has(violation.impact));
}

/** One line per violation: its rule, what it asks, and where. */
export function describeViolations(violations: AxeViolation[]): string {
  return violations.map((violation) => `${violation.impact} ${violation.id}: ${violation.help} (${violation.helpUrl})\n    at ${violation.targets.join('\n    at ')}`).join('\n');
}

/** Fails with each serious or critical violation named when the page has any. */
export async function expectNoSeriousViolations(page: Page, pageName: string): Promise<void> {
  const violations = await axeViolations(page);
  if (violations.length > 0) throw new Error(`axe found ${violations.length} serious or critical violation(s) on ${pageName}:\n${describeViolations(violations)}`);
}
