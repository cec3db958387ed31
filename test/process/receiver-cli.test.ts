import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { canonicalBody, signatureHeaders, type SigningSecrets } from '../../lib/deliveries/signing';
import { useLocalService } from '../support/local-service';
import { freePort } from '../support/npm-start';
import { runScript, spawnScript } from '../support/processes';
import { useTempDir } from '../support/temp-dir';

const CLI = 'infra/receiver-cli.ts';
const randomSecret = () => randomBytes(32).toString('hex');

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
    const receiver = await start(['--secret', secret]);
    const message = notification();
    expect(await deliver(receiver, message, { current: secret })).toEqual({ status: 200, body: { received: true } });
    const output = await receiver.waitFor(headerLine(message, '1 {2}x-signature ✓ webhook-signature ✓ {2}→ 200$'));
    expect(output).toContain(JSON.stringify(JSON.parse(canonicalBody(message)), null, 2));
    expect(output).toContain('Verifying signatures with the secret given by --secret.');
    expect(output).not.toContain(secret);
  });

  it('with --fail 1, answers 500 to the first request, then 200, counting the attempts of one messageId', async () => {
    const secret = randomSecret();
    const receiver = await start(['--secret', secret, '--fail', '1']);
    const message = notification();
    expect(await deliver(receiver, message, { current: secret })).toEqual({ status: 500, body: { received: false } });
    expect(await deliver(receiver, message, { current: secret })).toEqual({ status: 200, body: { received: true } });
    await receiver.waitFor(headerLine(message, '1 {2}x-signature ✓ webhook-signature ✓ {2}→ 500 \\(--fail 1: request 1 of 1 fails on purpose\\)$'));
    await receiver.waitFor(headerLine(message, '2 {2}x-signature ✓ webhook-signature ✓ {2}→ 200$'));
  });

  it('prints ✗ with the reason for a bad signature, and still answers 200', async () => {
    const secret = randomSecret();
    const receiver = await start(['--secret', secret]);
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

  it('without --secret or --key, receives and prints, verification not checked', async () => {
    const receiver = await start([]);
    const message = notification();
    expect((await deliver(receiver, message)).status).toBe(200);
    await receiver.waitFor(headerLine(message, '1 {2}not checked \\(no --secret or --key\\) {2}→ 200$'));
  });

  it('--help prints the usage and exits 0', async () => {
    const result = await runScript(CLI, ['--help'], {});
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage:\n {2}npm run receiver -- /);
    expect(result.stdout).toContain('--fail N');
  });

  it.each([
    [['--port', 'abc'], "--port must be a whole number, not 'abc'"],
    [['--port', '70000'], '--port must be at most 65535'],
    [['--fail=-1'], "--fail must be a whole number, not '-1'"],
    [['--key'], "Option '--key"],
    [['--bogus'], "Unknown option '--bogus'"],
    [['whk_positional'], 'unexpected argument: every argument is an --option'],
    [['--secret', 'not-a-secret'], '--secret must be the shared secret: 64 hex characters'],
    [['--secret', 'ab'.repeat(32), '--key', 'whk_x'], 'give --secret or --key, not both'],
    [['--api', 'http://127.0.0.1:3000'], '--api is where the secret is fetched with --key: give --key or --key-file too'],
    [['--key-file', '/nonexistent/dev-api-key'], 'cannot read --key-file /nonexistent/dev-api-key (ENOENT)'],
    [['--key-file', '/nonexistent/dev-api-key', '--key', 'whk_x'], 'give one of --secret, --key and --key-file'],
    [['--key', 'whk_x', '--api', 'ftp://example.com'], "--api must be an http:// or https:// URL, not 'ftp://example.com'"],
  ])('exits 2 on bad arguments %j with a one-line reason', async (args, reason) => {
    const result = await runScript(CLI, args, {});
    expect(result.code).toBe(2);
    // parseArgs' own reasons (unknown option, missing value) are matched by their start: Node words them variously.
    expect(result.stderr.slice(0, `receiver: ${reason}`.length)).toBe(`receiver: ${reason}`);
    expect(result.stderr).toMatch(/^[^\n]* \(npm run receiver -- --help\)\n$/);
    expect(result.stdout).toBe('');
    expect(result.stderr).not.toMatch(/not-a-secret|whk_/);
  });

  it('exits 1 when --key is given and the service cannot be reached', async () => {
    const port = await freePort();
    const result = await runScript(CLI, ['--port', '0', '--key', 'whk_secretive', '--api', `http://127.0.0.1:${port}`], {});
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `receiver: cannot reach the service at http://127.0.0.1:${port} to fetch the shared secret (ECONNREFUSED); is npm start running there?\n`,
    );
  });
});

describe('npm run receiver', () => {
  it('stops when npm alone is sent SIGTERM (kill $! of a receiver run in the background), freeing its port', async () => {
    // A process group of its own, so that whatever is left when the test fails can be stopped.
    const npm = spawn('npm', ['run', '-s', 'receiver', '--', '--port', '0', '--secret', randomSecret()], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
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

describe('the receiver CLI with --key, against the running service', () => {
  const service = useLocalService();
  const tempDir = useTempDir('receiver-key-');

  it('fetches the secret when the first notification comes, and again after a rotation; never prints it or the key', async () => {
    const key = await service.keyFor(`receiver-${randomBytes(4).toString('hex')}`);
    const receiver = await startReceiver(['--key', key, '--api', service.url()]);
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
    const result = await runScript(CLI, ['--port', '0', '--key', 'whk_unknown', '--api', service.url()], {});
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`receiver: the service at ${service.url()} refused the API key (401): is it a key of this service's account?\n`);
  });
});
