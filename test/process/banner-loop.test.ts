import { spawn } from 'node:child_process';
import path from 'node:path';
import { freePort } from '../support/npm-start';
import { startServerProcess, type RunningServer } from '../support/processes';
import { useTempDir } from '../support/temp-dir';

const ROOT = path.resolve(__dirname, '../..');
const dataDirs = useTempDir('webhooks-banner-loop-');

function bash(script: string) {
  const child = spawn('bash', ['-c', script], { cwd: ROOT, env: process.env, detached: true });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { output: () => output, exited, kill: () => process.kill(-child.pid!, 'SIGTERM') };
}

async function until(condition: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

let server: RunningServer | undefined;
let receiver: ReturnType<typeof bash> | undefined;
afterAll(async () => {
  receiver?.kill();
  await server?.stop('SIGTERM');
});

it("npm start's banner gives the loop from a transaction to a notification, which runs as printed with the key it wrote", async () => {
  server = await startServerProcess({ DATA_DIR: path.join(dataDirs(), 'data') });
  await until(() => /npm run chain -- send .*\n/.test(server!.output()), 'the rest of the banner', 5_000);
  const loop = server.output().slice(server.output().indexOf('From a transaction to a notification:'));
  const [receiverCommand, webhookCommand, sendCommand] = [...loop.matchAll(/^ {7}(\S.*)$/gm)].map((match) => match[1]!);
  expect(receiverCommand).toMatch(/^npm run receiver -- --key-file /);
  expect(webhookCommand).toMatch(/^curl -s -X POST /);
  expect(sendCommand).toMatch(/npm run chain -- send --to 0x[0-9a-fA-F]{40} --value 1\.5$/);

  // The one change: the receiver listens on a free port, not on 4000.
  const receiverPort = await freePort();
  receiver = bash(`${receiverCommand} --port ${receiverPort}`);
  await until(() => receiver!.output().includes('Receiving notifications at'), 'the receiver');
  const created = bash(webhookCommand!.replace('127.0.0.1:4000', `127.0.0.1:${receiverPort}`));
  expect(await created.exited).toBe(0);
  // The banner's curl ends in `; echo`: a curl that got no answer still exits 0, with nothing printed.
  if (!created.output().trim()) throw new Error(`the banner's curl printed nothing; npm start's output:\n${server.output()}`);
  expect(JSON.parse(created.output())).toMatchObject({ status: 'active', chainId: '31337' });
  const sent = bash(sendCommand!);
  expect(await sent.exited).toBe(0);
  const transaction = /transaction (0x[0-9a-f]{64})/.exec(sent.output())![1]!;

  await until(() => receiver!.output().includes(transaction), 'the notification');
  expect(receiver.output()).toContain('x-signature ✓ webhook-signature ✓');
  expect(receiver.output()).toContain('"valueWithDecimals": "1.5"');
}, 90_000);
