import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEV_ACCOUNT, jsonRpc as rpc } from '../support/dev-chain';
import { randomAddress } from '../support/factories';
import { apiCaller, devChainUrl, freePort, type NpmStart, startNpmStart, stopAfterAll } from '../support/npm-start';
import { logLines } from '../support/processes';
import { startReceiver, type Receiver } from '../support/receiver';
import { useTempDir } from '../support/temp-dir';

const dataDirs = useTempDir('webhooks-chain-after-kill-');
const WATCHED = Array.from({ length: 5 }, randomAddress);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let running: NpmStart | undefined;
let receiver: Receiver | undefined;
stopAfterAll(() => running, () => receiver);

/** Sends `count` transfers, one block each, to the watched addresses in turn; ignores failures (the node may be going down). */
async function sendTransfers(url: string, count: number) {
  for (let index = 0; index < count; index += 1) {
    await rpc(url, 'eth_sendTransaction', [{ from: DEV_ACCOUNT, to: WATCHED[index % WATCHED.length], value: '0x1' }]).catch(() => undefined);
  }
}

/** Every (transaction, block) of the node's chain now that sends to a watched address. */
async function canonicalTransfers(url: string): Promise<string[]> {
  const head = Number(await rpc(url, 'eth_blockNumber'));
  const found: string[] = [];
  for (let number = 1; number <= head; number += 1) {
    const block = await rpc(url, 'eth_getBlockByNumber', [`0x${number.toString(16)}`, true]);
    for (const transaction of block.transactions) if (WATCHED.includes(transaction.to)) found.push(`${transaction.hash}@${block.hash}`);
  }
  return found;
}

it(
  'SIGKILL of npm start while blocks are being followed loses no activity and records no message twice',
  async () => {
    const dataDir = path.join(dataDirs(), 'data');
    // A lease of 3 s, not 15: the killed follower's has run out by the time the restart follows the chain.
    const env = { PORT: String(await freePort()), DYNAMODB_PORT: String(await freePort()), DEV_CHAIN_PORT: String(await freePort()), DATA_DIR: dataDir, LEASE_SECONDS: '3' };
    receiver = await startReceiver();
    running = await startNpmStart(env);
    const call = apiCaller(() => running!.url, readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim());
    const created = await call('POST', '/v1/webhooks', { url: receiver.url, chainId: '31337', eventType: 'address_activity', metadata: { addresses: WATCHED } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;

    const url = devChainUrl(running);
    await sendTransfers(url, 20);
    // anvil saves its chain every second: these 20 survive the kill (on a loaded machine, most of
    // them), what follows may not.
    await sleep(2500);
    const sending = sendTransfers(url, 20);
    await sleep(150);
    await running.killGroup();
    const killedOutput = running.output();
    running = undefined;
    await sending;

    running = await startNpmStart(env);
    await sendTransfers(devChainUrl(running), 10);
    const expected = await canonicalTransfers(devChainUrl(running));
    // Blocks from before the kill are among them, or the test would prove nothing.
    expect(expected.length).toBeGreaterThan(10);
    const received = () => new Set(receiver!.requests.map((request) => JSON.parse(request.body).event.transaction).map((tx) => `${tx.txHash}@${tx.blockHash}`));
    const deadline = Date.now() + 45_000;
    while (expected.some((transfer) => !received().has(transfer))) {
      if (Date.now() > deadline) {
        const followerLines = (output: string) => logLines(output).filter((line: any) => /chain|reorganisation|node/.test(line.message)).map((line) => JSON.stringify(line));
        const missing = expected.filter((transfer) => !received().has(transfer));
        throw new Error(`not notified: ${missing.join(', ')}\nthe follower before the kill:\n${followerLines(killedOutput).join('\n')}\nafter:\n${followerLines(running.output()).join('\n')}`);
      }
      await sleep(200);
    }
    const log = (await call('GET', `/v1/webhooks/${id}/deliveries?pageSize=100`)).body.deliveries.map((entry: { messageId: string }) => entry.messageId);
    expect(new Set(log).size).toBe(log.length);
    expect(log.length).toBeGreaterThanOrEqual(expected.length);
  },
  120_000,
);
