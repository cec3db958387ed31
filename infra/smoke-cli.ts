import './local/node-version-warning';
import './cli-output';
import { stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { isApiKeyForm } from '../lib/keys/api-keys';
import { DELIVERY_TIMEOUT_MS, walkStage, type SmokeTarget, type StepOutcome } from './smoke-walk';
import { keyFileArgument } from './local/key-file';
import { terminalSafe } from './terminal-text';

const USAGE = `Usage:
  npm run smoke -- --api <url> --key-file <file> [--receiver <url>]

Walks a stage's API as a client would, with the hosted SDK (@avalabs/avacloud-sdk) where it has the
operation: lists the chains, gets the account's shared secret (generates it when the account has
none; an existing one is never rotated), creates a webhook on the first chain (on random addresses, so
nothing real notifies it), lists and gets it, adds, lists and removes an address, sends it a test
notification (with --receiver), creates an API key and revokes it, deactivates the webhook and
deletes it for good. What it made is deleted also when a step fails. Prints one line per step (OK or
FAIL, milliseconds; on FAIL the HTTP status and the error's message); exits 0 when every step
passed, 1 otherwise, 2 on bad arguments.

  --api URL        the API's base URL: cdk deploy's ApiUrl output
                   (https://<id>.execute-api.<region>.amazonaws.com/<stage>), or http://127.0.0.1:3000
  --key-file F     a file holding an API key of the account to walk ('-' reads it from stdin); a key
                   is never taken from the command line, and never printed
  --receiver URL   the webhook's URL: a test notification is sent there, and the walk waits up to
                   ${DELIVERY_TIMEOUT_MS / 1000} s for the delivery log to show it delivered (a 2xx from the receiver)
  -h, --help       this text

The revoked key stays in the account's key list (revoked keys are kept for the audit trail).`;

class UsageError extends Error {}

async function targetOf(argv: string[]): Promise<SmokeTarget | 'help'> {
  const { values } = parseArgs({
    args: argv,
    options: {
      api: { type: 'string' },
      'key-file': { type: 'string' },
      receiver: { type: 'string' },
      // Declared only to be refused with the option to use instead.
      key: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  // Its value never repeated in a message: on the command line, other users' ps shows it.
  if (values.key !== undefined) throw new UsageError("--key puts the API key on the command line, where other users' ps shows it: give --key-file <file> instead");
  if (values.api === undefined) throw new UsageError('--api <url> is required');
  if (values['key-file'] === undefined) throw new UsageError('--key-file <file> is required');
  const api = httpUrl(values.api, '--api').replace(/\/+$/, '');
  const receiver = values.receiver === undefined ? undefined : httpUrl(values.receiver, '--receiver');
  return { api, key: await keyFrom(values['key-file']), receiver };
}

function httpUrl(value: string, option: string): string {
  if (!/^https?:\/\/[^/]/.test(value) || !URL.canParse(value)) throw new UsageError(`${option} must be an http:// or https:// URL, not '${terminalSafe(value)}'`);
  return value;
}

/**
 * The key in the file. A file other users can read is used, with a warning, not refused: by then the
 * key is as exposed as it will be, and secret files mounted by CI runners are often 0644.
 */
async function keyFrom(file: string): Promise<string> {
  let key: string;
  try {
    if (file !== '-') {
      const { mode } = await stat(file);
      if ((mode & 0o077) !== 0) warn(`${file} can be read by other users (mode ${(mode & 0o777).toString(8)}): the key in it is theirs too; chmod 600 ${file}`);
    }
    key = await keyFileArgument(file);
  } catch (error) {
    throw new UsageError(`cannot read --key-file ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (!isApiKeyForm(key)) throw new UsageError(`${file === '-' ? 'stdin' : file} does not hold an API key (whk_ and 43 characters)`);
  return key;
}

/** One line: the step, OK or FAIL, its milliseconds; on FAIL the HTTP status and what the stage said (escaped: it is the stage's text). */
function stepLine({ name, ms, failure }: StepOutcome): string {
  const timing = `${String(ms).padStart(6)} ms`;
  if (!failure) return `${name.padEnd(34)} OK    ${timing}`;
  const status = failure.status === undefined ? '' : `HTTP ${failure.status}: `;
  return `${name.padEnd(34)} FAIL  ${timing}  ${status}${terminalSafe(failure.message)}`;
}

function warn(line: string) {
  process.stderr.write(`smoke: warning: ${line}\n`);
}

async function main(argv: string[]): Promise<number> {
  const target = await targetOf(argv);
  if (target === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  process.stdout.write(`Smoke test of ${terminalSafe(target.api)}${target.receiver ? `, notifying ${terminalSafe(target.receiver)}` : ''}\n`);
  let failed = 0;
  const passed = await walkStage(target, (outcome) => {
    if (outcome.failure) failed += 1;
    process.stdout.write(`${stepLine(outcome)}\n`);
  });
  process.stdout.write(passed ? 'Every step passed.\n' : `${failed} step(s) failed.\n`);
  return passed ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const code = (error as { code?: string }).code;
    const usage = error instanceof UsageError || code?.startsWith('ERR_PARSE_ARGS');
    // One line, and never a stray argument: it may be the key.
    const reason = code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' ? 'unexpected argument: every argument is an --option' : (error as Error).message.split('\n')[0];
    process.stderr.write(usage ? `smoke: ${reason}\n${USAGE}\n` : `smoke: unexpected error: ${reason}\n`);
    process.exit(usage ? 2 : 1);
  },
);
