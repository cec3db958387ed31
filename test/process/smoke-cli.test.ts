import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { apiCaller, freePort, startNpmStart, stopAfterAll, type NpmStart } from '../support/npm-start';
import { startReceiver, type Receiver } from '../support/receiver';
import { useTempDir } from '../support/temp-dir';

const ROOT = path.resolve(__dirname, '../..');
const dataDirs = useTempDir('webhooks-smoke-');

/** `npm run smoke` as a user runs it, to its exit. */
function smoke(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('npm', ['run', '-s', 'smoke', '--', ...args], { cwd: ROOT, env: process.env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

/** The step lines printed: name and OK or FAIL. */
const steps = (stdout: string) => [...stdout.matchAll(/^(\S.*?) +(OK|FAIL) +\d+ ms/gm)].map((match) => [match[1], match[2]]);

function keyFileHolding(key: string, mode: number): string {
  const file = path.join(dataDirs(), `key-${randomBytes(4).toString('hex')}`);
  writeFileSync(file, `${key}\n`, { mode });
  return file;
}

let running: NpmStart | undefined;
let receiver: Receiver | undefined;
let failingReceiver: Receiver | undefined;
stopAfterAll(() => running, () => [receiver, failingReceiver].filter((started) => started !== undefined));

let keyFile = '';
let call: ReturnType<typeof apiCaller>;
beforeAll(async () => {
  const dataDir = path.join(dataDirs(), 'data');
  const ports = { PORT: String(await freePort()), DYNAMODB_PORT: String(await freePort()), DEV_CHAIN_PORT: String(await freePort()) };
  // No retries: a receiver's failure is the message's at once.
  running = await startNpmStart({ ...ports, DATA_DIR: dataDir, DELIVERY_RETRY_SCHEDULE: '' });
  keyFile = path.join(dataDir, 'dev-api-key');
  call = apiCaller(() => running!.url, readFileSync(keyFile, 'utf8').trim());
  receiver = await startReceiver();
  failingReceiver = await startReceiver(() => ({ status: 500, body: '{"error":"down"}' }));
}, 60_000);

describe('npm run smoke', () => {
  it('passes every step against npm start, its test notification reaches the receiver, and it leaves nothing behind', async () => {
    const { code, stdout, stderr } = await smoke(['--api', running!.url, '--key-file', keyFile, '--receiver', receiver!.url]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(steps(stdout)).toEqual(
      [
        'list chains',
        'get shared secret',
        // npm start's account has none yet.
        'generate shared secret',
        'create webhook',
        'list webhooks',
        'get webhook',
        'add address',
        'list addresses',
        'remove address',
        'send test notification',
        'delivery of the test notification',
        'create API key',
        'revoke API key',
        'deactivate webhook',
        'delete webhook',
      ].map((name) => [name, 'OK']),
    );
    expect(stdout).toMatch(/Every step passed\.\n$/);

    const [notification] = await receiver!.waitFor(1);
    expect(JSON.parse(notification!.body)).toMatchObject({ eventType: 'address_activity', event: { transaction: { blockNumber: '0' } } });
    expect((await call('GET', '/v1/webhooks')).body.webhooks).toEqual([]);
    const keys = (await call('GET', '/v1/apiKeys')).body.apiKeys;
    expect(keys).toEqual([expect.objectContaining({ name: 'smoke test', revokedAt: expect.any(Number) }), expect.objectContaining({ name: 'npm start', current: true })]);
    expect(keys[1].revokedAt).toBeUndefined();
    // Neither the key, nor the key it made, nor the shared secret it generated.
    const { secret } = (await call('GET', '/v1/webhooks:getSharedSecret')).body;
    expect(stdout).not.toMatch(/whk_/);
    expect(stdout).not.toContain(secret);
  }, 30_000);

  it('fails at its first step with the status and message of a refused key, and prints no key', async () => {
    const unknownKey = `whk_${randomBytes(32).toString('base64url')}`;
    // Readable by others: used, with a warning.
    const { code, stdout, stderr } = await smoke(['--api', running!.url, '--key-file', keyFileHolding(unknownKey, 0o644)]);
    expect(code).toBe(1);
    expect(steps(stdout)).toEqual([['list chains', 'FAIL']]);
    expect(stdout).toMatch(/^list chains +FAIL +\d+ ms {2}HTTP 401: \S/m);
    expect(stderr).toMatch(/can be read by other users \(mode 644\).*chmod 600/);
    expect(`${stdout}${stderr}`).not.toMatch(/whk_/);
  }, 20_000);

  it('fails at the delivery when the receiver answers 500, and still deletes the webhook it made', async () => {
    const { code, stdout } = await smoke(['--api', running!.url, '--key-file', keyFile, '--receiver', failingReceiver!.url]);
    expect(code).toBe(1);
    expect(steps(stdout).slice(-3)).toEqual([
      ['send test notification', 'OK'],
      ['delivery of the test notification', 'FAIL'],
      ['delete webhook', 'OK'],
    ]);
    expect(stdout).toMatch(/^delivery of the test notification +FAIL +\d+ ms {2}the delivery log shows it failed after 1 attempts \(last: .*500.*\)$/m);
    expect(failingReceiver!.requests).toHaveLength(1);
    expect((await call('GET', '/v1/webhooks')).body.webhooks).toEqual([]);
  }, 20_000);

  it('answers bad arguments with its usage and exit code 2, and refuses a key given on the command line without repeating it', async () => {
    const key = `whk_${randomBytes(32).toString('base64url')}`;
    const onCommandLine = await smoke(['--api', running!.url, '--key', key]);
    expect(onCommandLine.code).toBe(2);
    expect(onCommandLine.stderr).toContain('--key puts the API key on the command line');
    expect(onCommandLine.stderr).toContain('Usage:');
    expect(`${onCommandLine.stdout}${onCommandLine.stderr}`).not.toContain(key);
    const noApi = await smoke(['--key-file', keyFile]);
    expect(noApi).toMatchObject({ code: 2, stderr: expect.stringContaining('--api <url> is required') });
  }, 20_000);
});
