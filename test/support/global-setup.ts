import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ensureConsoleBuilt } from '../../infra/console-build';
import { AWS_CALLS_DIR_VARIABLE } from './aws-calls';

/** Set when this run made the AWS calls' folder (and so removes it): test/run-suite.sh gives its three runs one of its own. */
export const OWN_AWS_CALLS_DIR_VARIABLE = 'AWS_CALLS_DIR_OWN';

/**
 * jest's globalSetup, once per jest run rather than in each worker: the console built from the
 * current sources, for the tests that serve it and the stack tests that upload it; and a folder for
 * the AWS calls the test files record (test/support/aws-calls.ts), checked by the globalTeardown.
 */
export default async function globalSetup(): Promise<void> {
  await ensureConsoleBuilt();
  if (!process.env[AWS_CALLS_DIR_VARIABLE]) {
    process.env[AWS_CALLS_DIR_VARIABLE] = mkdtempSync(path.join(tmpdir(), 'aws-calls-'));
    process.env[OWN_AWS_CALLS_DIR_VARIABLE] = '1';
  }
}
