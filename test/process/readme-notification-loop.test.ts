import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { deliveryLog } from '../../infra/local/local-logger';
import { freePort, startNpmStart, type NpmStart } from '../support/npm-start';
import { logLines } from '../support/processes';
import { useTempDir } from '../support/temp-dir';

const ROOT = path.resolve(__dirname, '../..');
const dataDirs = useTempDir('webhooks-readme-loop-');

/** The sh blocks of the README's "From a transaction to a notification", as a user would paste them. */
function loopBlocks(): string[] {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('## From a transaction to a notification');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
}

/** The first sh block of a docs page: docs/backfills.md's loop, docs/delivery.md's look at the log and replay. */
function firstBlockOf(page: string): string {
  return /```sh\n([\s\S]*?)```/.exec(readFileSync(path.join(ROOT, 'docs', page), 'utf8'))![1]!;
}

function bash(script: string, env: Record<string, string>) {
  const child = spawn('bash', ['-c', script], { cwd: ROOT, env: { ...process.env, ...env }, detached: true });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { output: () => output, exited, kill: () => process.kill(-child.pid!, 'SIGTERM') };
}

let running: NpmStart | undefined;
let receiver: ReturnType<typeof bash> | undefined;
afterAll(async () => {
  receiver?.kill();
  await running?.killGroup();
});

it(
  "the README's loop runs as pasted: the receiver prints the transfer's notification, verified; docs/delivery.md's replay sends it again; docs/backfills.md's loop notifies a past transfer",
  async () => {
    const [receiverBlock, sendBlock] = loopBlocks();
    expect(receiverBlock).toContain("npm run receiver");
    expect(sendBlock).toContain('npm run chain -- send');
    const dataDir = path.join(dataDirs(), 'data');
    const ports = { PORT: String(await freePort()), DYNAMODB_PORT: String(await freePort()), DEV_CHAIN_PORT: String(await freePort()) };
    const receiverPort = String(await freePort());
    running = await startNpmStart({ ...ports, DATA_DIR: dataDir });
    // What the README says to export in every terminal for a server started with other variables.
    const exported = { ...ports, DATA_DIR: dataDir };
    // The changes: the data directory and ports of the server under test, not .data, 3000 and 4000.
    const local = (block: string) =>
      block.replaceAll('.data/', `${dataDir}/`).replaceAll('127.0.0.1:3000', `127.0.0.1:${ports.PORT}`).replaceAll('127.0.0.1:4000', `127.0.0.1:${receiverPort}`);
    receiver = bash(local(receiverBlock!).replace('npm run receiver --', `npm run receiver -- --port ${receiverPort}`), exported);
    while (!receiver.output().includes('Receiving notifications at')) await new Promise((resolve) => setTimeout(resolve, 100));

    const sender = bash(local(sendBlock!), exported);
    expect(await sender.exited).toBe(0);
    const transaction = /transaction (0x[0-9a-f]{64})/.exec(sender.output())![1]!;
    const deadline = Date.now() + 15_000;
    while (!receiver.output().includes(transaction) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.output()).toContain(`"txHash": "${transaction}"`);
    expect(receiver.output()).toContain('x-signature ✓ webhook-signature ✓');
    expect(receiver.output()).toContain('"valueWithDecimals": "1.5"');

    // Its attempt's line is in DATA_DIR/logs/deliveries.log (0600), not in npm start's terminal.
    const messageId = /"messageId": "([^"]+)"/.exec(receiver.output())![1]!;
    const attemptLines = () => logLines(readFileSync(deliveryLog.fileOf(dataDir), 'utf8')).filter((line) => line.message === 'delivery attempt');
    const logged = Date.now() + 5_000;
    while (!attemptLines().some((line) => line.messageId === messageId) && Date.now() < logged) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(attemptLines()).toContainEqual(expect.objectContaining({ level: 'INFO', messageId, statusCode: 200, next: 'succeeded' }));
    expect(statSync(deliveryLog.fileOf(dataDir)).mode & 0o777).toBe(0o600);
    expect(running.output()).not.toContain('"message":"delivery attempt"');

    // docs/delivery.md's look at the log, then a replay of the message: the receiver gets it again.
    const replay = bash(local(firstBlockOf('delivery.md')), exported);
    expect(await replay.exited).toBe(0);
    expect(replay.output()).toContain(`{"messageId":"${messageId}"}`);
    expect(replay.output()).toContain('"attemptHistory":[');
    const replayed = Date.now() + 15_000;
    const receivedTimes = () => receiver!.output().split(`"messageId": "${messageId}"`).length - 1;
    while (receivedTimes() < 2 && Date.now() < replayed) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receivedTimes()).toBe(2);

    // docs/backfills.md's loop, with the same server and receiver: a transfer before any webhook watches its address, then a backfill.
    const backfill = bash(local(firstBlockOf('backfills.md')), exported);
    expect(await backfill.exited).toBe(0);
    expect(backfill.output()).toContain('"status":"running"');
    const past = /transaction (0x[0-9a-f]{64})/.exec(backfill.output())![1]!;
    const backfilled = Date.now() + 15_000;
    while (!receiver.output().includes(past) && Date.now() < backfilled) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.output()).toContain(`"txHash": "${past}"`);
    expect(receiver.output()).toContain('"valueWithDecimals": "2"');
  },
  90_000,
);
