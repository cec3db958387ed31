import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { canonicalBody, signatureHeaders, type SigningSecrets } from '../../lib/deliveries/signing';
import { MAX_NOTIFICATION_BYTES } from '../../lib/store/messages';
import { useLocalService } from '../support/local-service';
import { freePort } from '../support/npm-start';
import { runScript, spawnScript } from '../support/processes';
import { sideBySide } from '../support/side-by-side';
import { useTempDir } from '../support/temp-dir';

const CLI = 'infra/receiver-cli.ts';
const randomSecret = () => randomBytes(32).toString('hex');
const files = useTempDir('receiver-cli-');

/** A file holding `text` as a user would keep a key or secret: readable by its owner only. */
function fileHolding(text: string): string {
  const file = path.join(files(), randomUUID());
  writeFileSync(file, `${text}\n`, { mode: 0o600 });
  return file;
}

interface Receiver {
  url: string;
  output: () => string;
  /** Resolves with the output once it matches `pattern`; fails after 10 s. */
  waitFor: (pattern: RegExp) => Promise<string>;
  stop: () => Promise<number | null>;
}

/** The receiver CLI as a process on a free port, once it printed its URL on its first line. */
async function startReceiver(args: string[]): Promise<Receiver> {
  const child = spawnScript(CLI, ['--port', '0', ...args], {});
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = async (pattern: RegExp) => {
    const deadline = Date.now() + 10_000;
    while (!pattern.test(output)) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the receiver never printed ${pattern}; it printed:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return output;
  };
  await waitFor(/\n/);
  const url = /^Receiving notifications at (http:\/\/127\.0\.0\.1:\d+\/)\n/.exec(output)?.[1];
  if (!url) throw new Error(`the receiver's first line is not its URL:\n${output}`);
  return {
    url,
    output: () => output,
    waitFor,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** A small address_activity message. */
function notification(): { webhookId: string; eventType: string; messageId: string; event: unknown } {
  return {
    webhookId: randomUUID(),
    eventType: 'address_activity',
    messageId: randomUUID(),
    event: { transaction: { txHash: `0x${randomBytes(32).toString('hex')}`, blockNumber: '45396106', value: '0', erc20Transfers: [] } },
  };
}

/** POSTs the message to the receiver as the dispatcher sends it: canonical body, signed. */
async function deliver(receiver: Receiver, message: ReturnType<typeof notification>, secrets?: SigningSecrets, tamper = (body: string) => body) {
  const body = canonicalBody(message);
  const headers = secrets
    ? signatureHeaders({ body, messageId: message.messageId, timestamp: Math.floor(Date.now() / 1000), secrets })
    : {};
  const response = await fetch(receiver.url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: tamper(body) });
  return { status: response.status, body: (await response.json()) as unknown };
}

/** POSTs `body` as given, with node:http (which sends header values as Latin-1 bytes, C1 controls included). */
function post(url: string, body: Buffer | string | Buffer[], headers: OutgoingHttpHeaders = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.once('end', () => resolve({ status: response.statusCode!, body: text }));
    });
    request.once('error', reject);
    for (const part of Array.isArray(body) ? body : [body]) request.write(part);
    request.end();
  });
}

/** A stand-in for the service's GET /v1/webhooks:getSharedSecret on loopback, counting the fetches. */
async function startSecretService(secret: string | undefined) {
  let fetches = 0;
  const server = createServer((_, response) => {
    fetches += 1;
    if (secret === undefined) response.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"none yet","statusCode":404,"error":"Not Found"}');
    else response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ secret }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    fetches: () => fetches,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What would act on a terminal: controls other than line breaks and tabs, DEL, C1, bidirectional marks. */
const ACTS_ON_A_TERMINAL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

const headerLine = (message: { messageId: string }, rest: string) => new RegExp(`^\\S+Z {2}${message.messageId} {2}address_activity {2}attempt ${rest}`, 'm');

describe('the receiver CLI', () => {
  const receivers: Receiver[] = [];
  const start = async (args: string[]) => {
    const receiver = await startReceiver(args);
    receivers.push(receiver);
    return receiver;
  };
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((receiver) => receiver.stop()));
  });

  it('answers 200 {"received":true} to a signed notification and prints it with both signatures ✓', async () => {
    const secret = randomSecret();
    const receiver = await start(['--secret-file', fileHolding(secret)]);
    const message = notification();
    expect(await deliver(receiver, message, { current: secret })).toEqual({ status: 200, body: { received: true } });
    const output = await receiver.waitFor(headerLine(message, '1 {2}x-signature ✓ webhook-signature ✓ {2}→ 200$'));
    expect(output).toContain(JSON.stringify(JSON.parse(canonicalBody(message)), null, 2));
    expect(output).toContain('Verifying signatures with the secret in --secret-file.');
    expect(output).not.toContain(secret);
  });

  it('with --fail 1, answers 500 to the first request, then 200, counting the attempts of one messageId', async () => {
    const secret = randomSecret();
    const receiver = await start(['--secret-file', fileHolding(secret), '--fail', '1']);
    const message = notification();
    expect(await deliver(receiver, message, { current: secret })).toEqual({ status: 500, body: { received: false } });
    expect(await deliver(receiver, message, { current: secret })).toEqual({ status: 200, body: { received: true } });
    await receiver.waitFor(headerLine(message, '1 {2}x-signature ✓ webhook-signature ✓ {2}→ 500 \\(--fail 1: request 1 of 1 fails on purpose\\)$'));
    await receiver.waitFor(headerLine(message, '2 {2}x-signature ✓ webhook-signature ✓ {2}→ 200$'));
  });

  it('prints ✗ with the reason for a bad signature, and still answers 200', async () => {
    const secret = randomSecret();
    const receiver = await start(['--secret-file', fileHolding(secret)]);
    const tampered = notification();
    const tamper = (body: string) => body.replace('"value":"0"', '"value":"1"');
    expect((await deliver(receiver, tampered, { current: secret }, tamper)).status).toBe(200);
    await receiver.waitFor(
      headerLine(tampered, '1 {2}x-signature ✗ webhook-signature ✗ \\(x-signature: does not match the body; webhook-signature: No matching signature found\\)'),
    );
    const otherSecret = notification();
    await deliver(receiver, otherSecret, { current: randomSecret() });
    await receiver.waitFor(headerLine(otherSecret, '1 {2}x-signature ✗ webhook-signature ✗'));
  });

  it('escapes control characters and bidirectional marks that a sender put in the body or the headers', async () => {
    const receiver = await start([]);
    const message = { ...notification(), messageId: 'id\u001b[2J\r\u202eevil', eventType: 'type\u009b31m\u0085' };
    expect((await deliver(receiver, message)).status).toBe(200);
    await receiver.waitFor(/^\S+Z {2}id\\u001b\[2J\\u000d\\u202eevil {2}type\\u009b31m\\u0085 {2}attempt 1 /m);
    // JSON.stringify escapes C0 controls itself; the bidirectional override is left to the receiver.
    expect(receiver.output()).toContain('"messageId": "id\\u001b[2J\\r\\u202eevil"');

    const raw = 'not JSON: \u001b]0;title\u0007 and \u001b[31mred\r\nline two\twith a tab \u2066isolated\u2069';
    expect((await post(receiver.url, raw, { 'webhook-id': 'header\u009b2J', 'content-type': 'text/plain' })).status).toBe(200);
    await receiver.waitFor(/^\S+Z {2}header\\u009b2J {2}\(no eventType\) {2}attempt 1 /m);
    expect(receiver.output()).toContain('not JSON: \\u001b]0;title\\u0007 and \\u001b[31mred\\u000d\nline two\twith a tab \\u2066isolated\\u2069\n');
    expect(receiver.output()).not.toMatch(ACTS_ON_A_TERMINAL);
  });

  it('answers 413 to a body over the largest notification, read or declared, and goes on receiving', async () => {
    const receiver = await start([]);
    const oneMiB = Buffer.alloc(1024 * 1024, 'a');
    const over = Math.ceil(MAX_NOTIFICATION_BYTES / oneMiB.length) + 1;
    // Chunked, without a length: the receiver counts what it reads.
    expect(await post(receiver.url, Array.from({ length: over }, () => oneMiB))).toMatchObject({ status: 413 });
    expect(await post(receiver.url, Buffer.concat(Array.from({ length: over }, () => oneMiB)), { 'webhook-id': 'declared' })).toMatchObject({ status: 413 });
    await receiver.waitFor(/^\S+Z {2}declared {2}body over \d+ bytes: not read {2}→ 413$/m);
    expect(receiver.output()).not.toContain('aaaa');

    const largest = notification();
    const padded = { ...largest, event: { padding: 'p'.repeat(MAX_NOTIFICATION_BYTES - canonicalBody({ ...largest, event: { padding: '' } }).length) } };
    expect(Buffer.byteLength(canonicalBody(padded))).toBe(MAX_NOTIFICATION_BYTES);
    expect((await deliver(receiver, padded)).status).toBe(200);
    await receiver.waitFor(headerLine(largest, '1 {2}not checked'));
  });

  it('without --secret-file or --key-file, receives and prints, verification not checked', async () => {
    const receiver = await start([]);
    const message = notification();
    expect((await deliver(receiver, message)).status).toBe(200);
    await receiver.waitFor(headerLine(message, '1 {2}not checked \\(no --secret-file or --key-file\\) {2}→ 200$'));
  });

  it('--help prints the usage and exits 0', async () => {
    const result = await runScript(CLI, ['--help'], {});
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage:\n {2}npm run receiver -- /);
    expect(result.stdout).toContain('--fail N');
  });

  // Each of the runs below exits at once on its arguments: they run side by side.
  const badArguments: [string[], string][] = [
    [['--port', 'abc'], "--port must be a whole number, not 'abc'"],
    [['--port', '70000'], '--port must be at most 65535'],
    [['--fail=-1'], "--fail must be a whole number, not '-1'"],
    [['--key'], "Option '--key"],
    [['--bogus'], "Unknown option '--bogus'"],
    [['whk_positional'], 'unexpected argument: every argument is an --option'],
    // A key or secret on the command line is refused, and not repeated.
    [['--key', 'whk_x'], "--key puts the API key on the command line, where other users' ps shows it: give --key-file <file> instead"],
    [['--secret', 'not-a-secret'], "--secret puts the secret on the command line, where other users' ps shows it: give --secret-file <file> instead"],
    [['--key-file', '/nonexistent/dev-api-key', '--key', 'whk_x'], '--key puts the API key on the command line'],
    [['--secret-file', '/nonexistent/secret', '--key-file', '/nonexistent/dev-api-key'], 'give --secret-file or --key-file, not both'],
    [['--api', 'http://127.0.0.1:3000'], '--api is where the secret is fetched with --key-file: give --key-file too'],
    [['--key-file', '/nonexistent/dev-api-key'], 'cannot read --key-file /nonexistent/dev-api-key (ENOENT)'],
    [['--secret-file', '/nonexistent/secret'], 'cannot read --secret-file /nonexistent/secret (ENOENT)'],
    [['--key-file', '/nonexistent/dev-api-key', '--api', 'ftp://example.com'], "--api must be an http:// or https:// URL, not 'ftp://example.com'"],
  ];
  const runWithBadArguments = sideBySide(
    badArguments.map(([args]) => args),
    (args) => runScript(CLI, args, {}),
  );

  it.each(badArguments)('exits 2 on bad arguments %j with a one-line reason', async (args, reason) => {
    const result = await runWithBadArguments(args);
    expect(result.code).toBe(2);
    // parseArgs' own reasons (unknown option, missing value) are matched by their start: Node words them variously.
    expect(result.stderr.slice(0, `receiver: ${reason}`.length)).toBe(`receiver: ${reason}`);
    expect(result.stderr).toMatch(/^[^\n]* \(npm run receiver -- --help\)\n$/);
    expect(result.stdout).toBe('');
    expect(result.stderr).not.toMatch(/not-a-secret|whk_/);
  });

  const secretFiles = [
    ['a file that is not the shared secret', 'not-a-secret', 'must hold the shared secret: 64 hex characters'],
    ['an empty file', '', 'is empty'],
  ] as const;
  const runWithSecretFile = sideBySide(
    secretFiles.map(([, text]) => text),
    async (text) => {
      const file = fileHolding(text);
      return { file, result: await runScript(CLI, ['--secret-file', file], {}) };
    },
  );

  it.each(secretFiles)('exits 2 on --secret-file naming %s, without repeating what it holds', async (_, text, reason) => {
    const { file, result } = await runWithSecretFile(text);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`receiver: --secret-file ${file} ${reason} (npm run receiver -- --help)\n`);
  });

  it.each([
    ['signatures that do not hold', randomSecret()],
    ['notifications while the account has no secret', undefined],
  ])('fetches the secret again once, not per notification, for a run of %s', async (_, served) => {
    const service = await startSecretService(served);
    try {
      const receiver = await start(['--key-file', fileHolding('whk_test'), '--api', service.url]);
      expect(service.fetches()).toBe(1);
      const startedAt = Date.now();
      for (let index = 0; index < 5; index += 1) {
        const message = notification();
        await deliver(receiver, message, { current: randomSecret() });
        await receiver.waitFor(headerLine(message, '1 {2}(x-signature ✗|not checked)'));
      }
      // One fetch on the first notification, then a pause of 5 s: the run takes far less.
      expect(service.fetches()).toBeLessThanOrEqual(2 + Math.floor((Date.now() - startedAt) / 5_000));
      expect(service.fetches()).toBeGreaterThanOrEqual(2);
    } finally {
      await service.close();
    }
  });

  it('exits 1 when --key-file is given and the service cannot be reached', async () => {
    const port = await freePort();
    const result = await runScript(CLI, ['--port', '0', '--key-file', fileHolding('whk_secretive'), '--api', `http://127.0.0.1:${port}`], {});
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `receiver: cannot reach the service at http://127.0.0.1:${port} to fetch the shared secret (ECONNREFUSED); is npm start running there?\n`,
    );
  });
});

describe('npm run receiver', () => {
  it('stops when npm alone is sent SIGTERM (kill $! of a receiver run in the background), freeing its port', async () => {
    // A process group of its own, so that whatever is left when the test fails can be stopped.
    const npm = spawn('npm', ['run', '-s', 'receiver', '--', '--port', '0', '--secret-file', fileHolding(randomSecret())], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    try {
      let output = '';
      npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise((resolve) => npm.once('exit', resolve));
      const deadline = Date.now() + 20_000;
      while (!/^Receiving notifications at (\S+)/.test(output) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      const url = /^Receiving notifications at (\S+)/.exec(output)![1]!;
      npm.kill('SIGTERM');
      await exited;
      const answers = () => fetch(url, { method: 'POST', body: '{}' }).then(() => true, () => false);
      for (let tries = 0; tries < 50 && (await answers()); tries += 1) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await answers()).toBe(false);
    } finally {
      try {
        process.kill(-npm.pid!, 'SIGKILL');
      } catch {
        // The group is gone: nothing was left behind.
      }
    }
  }, 30_000);
});

describe('the receiver CLI with --key-file, against the running service', () => {
  const service = useLocalService();
  const tempDir = useTempDir('receiver-key-');

  it('fetches the secret when the first notification comes, and again after a rotation; never prints it or the key', async () => {
    const key = await service.keyFor(`receiver-${randomBytes(4).toString('hex')}`);
    const receiver = await startReceiver(['--key-file', fileHolding(key), '--api', service.url()]);
    try {
      await receiver.waitFor(/The account has no shared secret yet: the service generates it with the first notification/);
      const first = (await service.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key })).body.secret as string;
      const before = notification();
      await deliver(receiver, before, { current: first });
      await receiver.waitFor(headerLine(before, '1 {2}x-signature ✓ webhook-signature ✓ {2}→ 200$'));

      // Rotated: the grace period signs with both; x-signature only with the new secret, which is fetched again.
      const second = (await service.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key })).body.secret as string;
      const after = notification();
      await deliver(receiver, after, { current: second, previous: first });
      await receiver.waitFor(headerLine(after, '1 {2}x-signature ✓ webhook-signature ✓ \\[the shared secret was rotated: fetched again\\] {2}→ 200$'));

      for (const secretText of [key, first, second]) expect(receiver.output()).not.toContain(secretText);
    } finally {
      await receiver.stop();
    }
  });

  it('reads the key from --key-file, and never prints it', async () => {
    const key = await service.keyFor(`receiver-${randomBytes(4).toString('hex')}`);
    const secret = (await service.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key })).body.secret as string;
    const file = path.join(tempDir(), 'dev-api-key');
    writeFileSync(file, `${key}\n`, { mode: 0o600 });
    const receiver = await startReceiver(['--key-file', file, '--api', service.url()]);
    try {
      const sent = notification();
      await deliver(receiver, sent, { current: secret });
      await receiver.waitFor(headerLine(sent, '1 {2}x-signature ✓ webhook-signature ✓ {2}→ 200$'));
      for (const secretText of [key, secret]) expect(receiver.output()).not.toContain(secretText);
    } finally {
      await receiver.stop();
    }
  });

  it('exits 1 when the service refuses the key', async () => {
    const result = await runScript(CLI, ['--port', '0', '--key-file', fileHolding('whk_unknown'), '--api', service.url()], {});
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`receiver: the service at ${service.url()} refused the API key (401): is it a key of this service's account?\n`);
  });
});
