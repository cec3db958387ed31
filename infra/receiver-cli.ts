import './local/node-version-warning';
import './cli-output';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { signingKey, verifyNotification, type Verification } from '../lib/deliveries/signing';
import { MAX_NOTIFICATION_BYTES } from '../lib/store/messages';
import { readBoundedBody } from './local/request-body';
import { ReceiverError, REFETCH_PAUSE_MS, secretSource } from './receiver-secret';
import { terminalSafe } from './terminal-text';

/** Where `npm start` serves the API unless told otherwise (infra/local/start.ts reads PORT the same way). */
const DEFAULT_API = `http://127.0.0.1:${process.env.PORT ?? 3000}`;

/** The largest body read: the service's largest notification, and room for a little more. */
const MAX_RECEIVED_BYTES = MAX_NOTIFICATION_BYTES + 64 * 1024;

const USAGE = `Usage:
  npm run receiver -- [--port 4000] [--host 127.0.0.1] [--secret-file <file> | --key-file <file> [--api <url>]] [--fail N]

A local receiver to try the service with: give a webhook the URL printed on the first line. Each POST
is answered 200 {"received":true} and printed: time, messageId, eventType, attempt number (per
messageId), whether x-signature and webhook-signature hold, then the body. What a sender controls is
printed with control characters and bidirectional marks escaped (as \\u001b); a body over ${MAX_RECEIVED_BYTES}
bytes is answered 413 and not read.

  --port N        port to listen on (default 4000; 0 picks a free one)
  --host H        interface to listen on (default 127.0.0.1)
  --secret-file F a file holding the account's shared secret (64 hex characters), to verify the
                  signatures with
  --key-file F    a file holding an API key of the account (e.g. .data/loop-key): the shared
                  secret is fetched from the service with it (when the account has none yet, it is
                  fetched when the first notification arrives), and again when a signature does not
                  hold (at most once per ${REFETCH_PAUSE_MS / 1000} s)
  --api URL       the service, for --key-file (default ${DEFAULT_API}; PORT as for npm start)
  --fail N        answer 500 to the first N requests, to watch the retries
  -h, --help      this text

Without --secret-file or --key-file, notifications are received and printed, not verified. The
secret and the key are read from files only, never from the command line (which npm echoes and other
users' ps shows), and never printed.`;

interface Options {
  port: number;
  host: string;
  secret?: string;
  key?: string;
  api: string;
  fail: number;
}

class UsageError extends Error {}

function parseOptions(argv: string[]): Options | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '4000' },
      host: { type: 'string', default: '127.0.0.1' },
      // Declared only to be refused with the option to use instead.
      secret: { type: 'string' },
      key: { type: 'string' },
      'secret-file': { type: 'string' },
      'key-file': { type: 'string' },
      api: { type: 'string' },
      fail: { type: 'string', default: '0' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const port = wholeNumber(values.port, '--port');
  if (port > 65535) throw new UsageError('--port must be at most 65535');
  // Refused, and their values never repeated in a message: on the command line, other users' ps shows them.
  if (values.key !== undefined) throw new UsageError("--key puts the API key on the command line, where other users' ps shows it: give --key-file <file> instead");
  if (values.secret !== undefined) throw new UsageError("--secret puts the secret on the command line, where other users' ps shows it: give --secret-file <file> instead");
  const keyFile = values['key-file'];
  const secretFile = values['secret-file'];
  if (keyFile !== undefined && secretFile !== undefined) throw new UsageError('give --secret-file or --key-file, not both');
  if (values.api !== undefined && keyFile === undefined) throw new UsageError('--api is where the secret is fetched with --key-file: give --key-file too');
  const api = values.api ?? DEFAULT_API;
  if (!/^https?:\/\/[^/]/.test(api) || !URL.canParse(api)) throw new UsageError(`--api must be an http:// or https:// URL, not '${api}'`);
  const key = keyFile === undefined ? undefined : readOptionFile(keyFile, '--key-file');
  const secret = secretFile === undefined ? undefined : readOptionFile(secretFile, '--secret-file');
  if (secret !== undefined) {
    try {
      signingKey(secret);
    } catch {
      throw new UsageError(`--secret-file ${secretFile} must hold the shared secret: 64 hex characters`);
    }
  }
  return { port, host: values.host, secret, key, api, fail: wholeNumber(values.fail, '--fail') };
}

function readOptionFile(file: string, option: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new UsageError(`cannot read ${option} ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (text === '') throw new UsageError(`${option} ${file} is empty`);
  return text;
}

function wholeNumber(value: string, option: string): number {
  if (!/^\d{1,9}$/.test(value)) throw new UsageError(`${option} must be a whole number, not '${value}'`);
  return Number(value);
}

function describeVerification(result: Verification): string {
  const mark = (holds: boolean) => (holds ? '✓' : '✗');
  return `x-signature ${mark(result.xSignature)} webhook-signature ${mark(result.standardWebhooks)}${result.error ? ` (${result.error})` : ''}`;
}

async function startReceiver(options: Options): Promise<void> {
  const secrets = secretSource(options);
  const initial = await secrets.initial();
  const attempts = new Map<string, number>();
  let requests = 0;

  const verification = async (rawBody: string, headers: Record<string, string>): Promise<string> => {
    if (options.secret === undefined && options.key === undefined) return 'not checked (no --secret-file or --key-file)';
    try {
      const secret = await secrets.get();
      if (secret === undefined) return 'not checked (the account has no shared secret yet)';
      const result = verifyNotification({ rawBody, headers, secret });
      if (result.xSignature && result.standardWebhooks) return describeVerification(result);
      if (!(await secrets.refetched())) return describeVerification(result);
      const again = verifyNotification({ rawBody, headers, secret: (await secrets.get())! });
      return `${describeVerification(again)} [the shared secret was rotated: fetched again]`;
    } catch (error) {
      return `not checked (${(error as Error).message})`;
    }
  };

  const server = createServer((request, response) => {
    if (request.method !== 'POST') {
      response.writeHead(405, { allow: 'POST', 'content-type': 'application/json' }).end('{"message":"notifications are POSTed here"}');
      return;
    }
    // The rest of a body over the bound is drained, for the sender, still sending, to get the 413.
    void readBoundedBody(request, MAX_RECEIVED_BYTES, 'drain').then(async (bytes) => {
      if (bytes === undefined) {
        const line = [new Date().toISOString(), headerValues(request.headers)['webhook-id'] ?? '(no webhook-id)', `body over ${MAX_RECEIVED_BYTES} bytes: not read`, '→ 413'];
        process.stdout.write(`${terminalSafe(line.join('  '))}\n\n`);
        response.writeHead(413, { 'content-type': 'application/json' }).end(JSON.stringify({ message: `bodies over ${MAX_RECEIVED_BYTES} bytes are not read` }));
        return;
      }
      const rawBody = bytes.toString('utf8');
      requests += 1;
      const failing = requests <= options.fail;
      const headers = headerValues(request.headers);
      const body = parsedJson(rawBody);
      const messageId = stringField(body, 'messageId') ?? headers['webhook-id'] ?? '(no messageId)';
      const attempt = (attempts.get(messageId) ?? 0) + 1;
      attempts.set(messageId, attempt);
      const status = failing ? `500 (--fail ${options.fail}: request ${requests} of ${options.fail} fails on purpose)` : '200';
      const line = [new Date().toISOString(), messageId, stringField(body, 'eventType') ?? '(no eventType)', `attempt ${attempt}`, await verification(rawBody, headers), `→ ${status}`];
      const shown = body === undefined ? rawBody : JSON.stringify(body, null, 2);
      process.stdout.write(`${terminalSafe(line.join('  '))}\n${terminalSafe(shown, { keepLineBreaks: true })}\n\n`);
      response.writeHead(failing ? 500 : 200, { 'content-type': 'application/json' }).end(JSON.stringify({ received: !failing }));
    }, () => response.destroy());
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new ReceiverError(`port ${options.port} on ${options.host} is in use: pick another with --port, and put that port in the webhook's url`) : error),
    );
    server.listen(options.port, options.host, resolve);
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  const source = options.secret !== undefined
    ? 'Verifying signatures with the secret in --secret-file.'
    : options.key === undefined
      ? 'Not verifying signatures (no --secret-file or --key-file).'
      : initial === undefined
        ? `The account has no shared secret yet: the service generates it with the first notification, and it is fetched from ${options.api} then.`
        : `Verifying signatures with the account's shared secret, fetched from ${options.api}.`;
  process.stdout.write(`Receiving notifications at http://${host}:${port}/\n${source}${options.fail ? ` The first ${options.fail} request(s) will be answered 500.` : ''} Ctrl-C stops.\n\n`);

  const stop = () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

function headerValues(headers: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).flatMap(([name, value]) => (value === undefined ? [] : [[name, Array.isArray(value) ? value.join(', ') : value]])),
  );
}

function parsedJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function stringField(body: unknown, name: string): string | undefined {
  const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' ? value : undefined;
}

async function main(argv: string[]): Promise<number | undefined> {
  const options = parseOptions(argv);
  if (options === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  await startReceiver(options);
  return undefined;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exit(code);
  },
  (error: unknown) => {
    const code = (error as { code?: string }).code;
    const usage = error instanceof UsageError || code?.startsWith('ERR_PARSE_ARGS');
    // One line (parseArgs goes on with hints on further lines), and never a stray argument: it may be the key.
    const reason = code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' ? 'unexpected argument: every argument is an --option' : (error as Error).message.split('\n')[0];
    if (usage) process.stderr.write(`receiver: ${reason} (npm run receiver -- --help)\n`);
    else process.stderr.write(`receiver: ${error instanceof ReceiverError ? '' : 'unexpected error: '}${reason}\n`);
    process.exit(usage ? 2 : 1);
  },
);
