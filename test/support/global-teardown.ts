import { rmSync } from 'node:fs';
import { AWS_CALLS_DIR_VARIABLE } from './aws-calls';
import { callsOutsideGrants, readRecordedCalls } from './aws-grants';
import { OWN_AWS_CALLS_DIR_VARIABLE } from './global-setup';
import { statementsOf, synth } from '../infra/stack-template';

/**
 * jest's globalTeardown: every AWS call the run's test files recorded, held against its function's
 * grant in the prod stage's template. A call outside it fails the run, naming the function and the
 * action (on AWS it would be AccessDenied).
 */
export default async function globalTeardown(): Promise<void> {
  const dir = process.env[AWS_CALLS_DIR_VARIABLE]!;
  try {
    const calls = readRecordedCalls(dir);
    if (calls.length === 0) return;
    const { resources } = synth('prod');
    const outside = callsOutsideGrants(resources, calls, (functionName) => statementsOf(resources, functionName));
    if (outside.length > 0) throw new Error(`AWS calls the tests recorded that the stack does not grant:\n  ${outside.join('\n  ')}`);
  } finally {
    if (process.env[OWN_AWS_CALLS_DIR_VARIABLE]) rmSync(dir, { recursive: true, force: true });
  }
}
