import './local/node-version-warning';
import './cli-output';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { signingKey, verifyNotification, type Verification } from '../lib/deliveries/signing';
import { API_KEY_HEADER } from '../lib/keys/authorize';
import { routes } from '../lib/routes';
import { sharedSecret } from '../lib/schemas/shared-secret';

/** Where `npm start` serves the API unless told otherwise (infra/local/start.ts reads PORT the same way). */
const DEFAULT_API = `http://127.0.0.1:${process.env.PORT ?? 3000}`;

const USAGE = `Usage:
  npm run receiver -- [--port 4000] [--host 127.0.0.1] [--secret <64 hex> | --key-file <file> | --key <api key> [--api <url>]] [--fail N]

A local receiver to try the service with: give a webhook the URL printed on the first line. Each POST
is answered 200 {"received":true} and printed: time, messageId, eventType, attempt number (per
messageId), whether x-signature and webhook-signature hold, then the body.

  --port N        port to listen on (default 4000; 0 picks a free one)
  --host H        interface to listen on (default 127.0.0.1)
  --secret HEX    the account's shared secret (64 hex characters), to verify the signatures with
  --key KEY       an API key of the account: the shared secret is fetched from the service with it
                  (when the account has none yet, it is fetched when the first notification arrives)
  --key-file F    the API key, read from a file (e.g. .data/dev-api-key): kept out of the command
                  line, which npm echoes and other users' ps shows
  --api URL       the service, for --key (default ${DEFAULT_API}; PORT as for npm start)
  --fail N        answer 500 to the first N requests, to watch the retries
  -h, --help      this text

Without --secret or --key, notifications are received and printed, not verified. The secret and the
key are never printed.`;

interface Options {
  port: number;
  host: string;
  secret?: string;
  key?: string;
  api: string;
  fail: number;
}

class UsageError extends Error {}
/** A failure to run that is not the arguments' fault (the service, the port): exit 1. */
class ReceiverError extends Error {}

function parseOptions(argv: string[]): Options | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '4000' },
      host: { type: 'string', default: '127.0.0.1' },
      secret: { type: 'string' },
      key: { type: 'string' },
      'key-file': { type: 'string' },
      api: { type: 'string' },
      fail: { type: 'string', default: '0' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const port = wholeNumber(values.port, '--port');
  if (port > 65535) throw new UsageError('--port must be at most 65535');
  // The values of --secret and --key are never repeated in a message.
  if (values.secret !== undefined && values.key !== undefined) throw new UsageError('give --secret or --key, not both');
  if (values.secret !== undefined) {
    try {
      signingKey(values.secret);
    } catch {
      throw new UsageError('--secret must be the shared secret: 64 hex characters');
    }
  }
  if (values['key-file'] !== undefined) {
    if (values.key !== undefined || values.secret !== undefined) throw new UsageError('give one of --secret, --key and --key-file');
    values.key = readKeyFile(values['key-file']);
  }
  if (values.key === '') throw new UsageError('--key must not be empty');
  if (values.api !== undefined && values.key === undefined) throw new UsageError('--api is where the secret is fetched with --key: give --key or --key-file too');
  const api = values.api ?? DEFAULT_API;
  if (!/^https?:\/\/[^/]/.test(api) || !URL.canParse(api)) throw new UsageError(`--api must be an http:// or https:// URL, not '${api}'`);
  return { port, host: values.host, secret: values.secret, key: values.key, api, fail: wholeNumber(values.fail, '--fail') };
}

function readKeyFile(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new UsageError(`cannot read --key-file ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

function wholeNumber(value: string, option: string): number {
  if (!/^\d{1,9}$/.test(value)) throw new UsageError(`${option} must be a whole number, not '${value}'`);
  return Number(value);
}

/**
 * The secret to verify with: the one given, or the account's, fetched with the key. An account gets
 * its secret with its first notification, so a missing one is fetched again when notifications come.
 */
function secretSource(options: Options) {
  let secret = options.secret;
  let fetching: Promise<string | undefined> | undefined;
  const fetchOnce = () => {
    fetching ??= fetchSharedSecret(options.api, options.key!).finally(() => (fetching = undefined));
    return fetching;
  };
  return {
    async get(): Promise<string | undefined> {
      if (secret === undefined && options.key !== undefined) secret = await fetchOnce();
      return secret;
    },
    /** Fetches the secret again; true when it changed (it was rotated since it was fetched). */
    async refetched(): Promise<boolean> {
      if (options.key === undefined) return false;
      const fetched = await fetchOnce();
      const changed = fetched !== undefined && fetched !== secret;
      secret = fetched ?? secret;
      return changed;
    },
  };
}

/** The account's shared secret, or undefined when it has none yet (404). */
async function fetchSharedSecret(api: string, key: string): Promise<string | undefined> {
  const url = `${api.replace(/\/+$/, '')}${routes.getSharedSecret.path}`;
  let response: Response;
  try {
    response = await fetch(url, { headers: { [API_KEY_HEADER]: key }, signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new ReceiverError(`cannot reach the service at ${api} to fetch the shared secret (${cause?.code ?? cause?.message ?? (error as Error).message}); is npm start running there?`);
  }
  if (response.status === 404) return undefined;
  if (response.status === 401) throw new ReceiverError(`the service at ${api} refused the API key (401): is it a key of this service's account?`);
  if (!response.ok) throw new ReceiverError(`the service at ${api} answered ${response.status} to ${routes.getSharedSecret.path}`);
  const { secret } = sharedSecret.parse(await response.json());
  return secret;
}

function describeVerification(result: Verification): string {
  const mark = (holds: boolean) => (holds ? '✓' : '✗');
  return `x-signature ${mark(result.xSignature)} webhook-signature ${mark(result.standardWebhooks)}${result.error ? ` (${result.error})` : ''}`;
}

async function startReceiver(options: Options): Promise<void> {
  const secrets = secretSource(options);
  const initial = await secrets.get();
  const attempts = new Map<string, number>();
  let requests = 0;

  const verification = async (rawBody: string, headers: Record<string, string>): Promise<string> => {
    if (options.secret === undefined && options.key === undefined) return 'not checked (no --secret or --key)';
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
    void readBody(request).then(async (rawBody) => {
      requests += 1;
      const failing = requests <= options.fail;
      const headers = headerValues(request.headers);
      const body = parsedJson(rawBody);
      const messageId = stringField(body, 'messageId') ?? headers['webhook-id'] ?? '(no messageId)';
      const attempt = (attempts.get(messageId) ?? 0) + 1;
      attempts.set(messageId, attempt);
      const status = failing ? `500 (--fail ${options.fail}: request ${requests} of ${options.fail} fails on purpose)` : '200';
      const line = [new Date().toISOString(), messageId, stringField(body, 'eventType') ?? '(no eventType)', `attempt ${attempt}`, await verification(rawBody, headers), `→ ${status}`];
      process.stdout.write(`${line.join('  ')}\n${body === undefined ? rawBody : JSON.stringify(body, null, 2)}\n\n`);
      response.writeHead(failing ? 500 : 200, { 'content-type': 'application/json' }).end(JSON.stringify({ received: !failing }));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new ReceiverError(`port ${options.port} on ${options.host} is in use: pick another with --port`) : error),
    );
    server.listen(options.port, options.host, resolve);
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  const source = options.secret !== undefined
    ? 'Verifying signatures with the secret given by --secret.'
    : options.key === undefined
      ? 'Not verifying signatures (no --secret or --key).'
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

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.once('error', reject);
  });
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
