import { ensureConsoleBuilt } from '../../infra/console-build';

/**
 * jest's globalSetup: the console built from the current sources before any test file runs, once per
 * jest run rather than in each worker, for the tests that serve it and the stack tests that upload it.
 */
export default async function consoleBuilt(): Promise<void> {
  await ensureConsoleBuilt();
}
