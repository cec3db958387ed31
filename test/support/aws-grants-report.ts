/**
 * `tsx test/support/aws-grants-report.ts <dir>`: after the whole suite (test/run-suite.sh), the
 * grants of the stack's functions that no call the suite recorded used. Printed, not failed: a grant
 * may serve a path no test takes (say so beside it in the stack), or be one to remove.
 */
import { BACKGROUND_FUNCTIONS } from '../../lib/entry-point';
import { routeList } from '../../lib/routes';
import { readRecordedCalls, unusedGrants } from './aws-grants';
import { statementsOf, synth } from '../infra/stack-template';

const dir = process.argv[2];
if (!dir) throw new Error('usage: tsx test/support/aws-grants-report.ts <the folder of recorded calls>');
const calls = readRecordedCalls(dir);
const { resources } = synth('prod');
const entries = [...routeList.map((route) => route.operationId), ...Object.values(BACKGROUND_FUNCTIONS)];
const unused = unusedGrants(resources, calls, (name) => statementsOf(resources, name), entries);
const silent = entries.filter((entry) => !calls.some((call) => call.entry === entry));
console.log(`AWS calls recorded by the suite: ${calls.length} kinds, all within their functions' grants.`);
if (silent.length > 0) console.log(`Functions no test ran as the stack runs them: ${silent.join(', ')}`);
if (unused.length > 0) console.log(`Grants no recorded call used (${unused.length}):\n  ${unused.join('\n  ')}`);
