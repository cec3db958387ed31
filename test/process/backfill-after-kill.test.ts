import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEV_ACCOUNT, jsonRpc as rpc } from '../support/dev-chain';
import { randomAddress } from '../support/factories';
import { apiCaller, devChainUrl, freePort, type NpmStart, startNpmStart, stopAfterAll } from '../support/npm-start';
import { startReceiver, type Receiver } from '../support/receiver';
import { useTempDir } from '../support/temp-dir';

const dataDirs = useTempDir('webhooks-backfill-after-kill-');
const WATCHED = Array.from({ length: 3 }, randomAddress);
const TRANSFERS = 40;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let running: NpmStart | undefined;
let receiver: Receiver | undefined;
stopAfterAll(() => running, () => receiver);

it(
  'SIGKILL of npm start mid-backfill: after the restart the backfill resumes from its checkpoint, every past transfer recorded once',
  async () => {
    const dataDir = path.join(dataDirs(), 'data');
    // Paced slowly, so that the kill finds the backfill half done; a lease of 3 s, so that the restart's runner takes over soon.
    const env = {
      PORT: String(await freePort()),
      DYNAMODB_PORT: String(await freePort()),
      DEV_CHAIN_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      LEASE_SECONDS: '3',
      BACKFILL_RPC_REQUESTS_PER_SECOND: '60',
    };
    receiver = await startReceiver();
    running = await startNpmStart(env);
    const call = apiCaller(() => running!.url, readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim());
    const url = devChainUrl(running);
    const hashes: string[] = [];
    // Spread over several of the backfill's runs of blocks, with empty blocks between them.
    for (let index = 0; index < TRANSFERS; index += 1) {
      hashes.push(await rpc(url, 'eth_sendTransaction', [{ from: DEV_ACCOUNT, to: WATCHED[index % WATCHED.length], value: '0x1' }]));
      await rpc(url, 'anvil_mine', ['0x5']);
    }
    const head = Number(await rpc(url, 'eth_blockNumber'));
    // The live follower has gone past them before the webhook exists, and the chain is saved.
    for (let tries = 0; ; tries += 1) {
      const { body } = await call('GET', '/v1/chains');
      if ((body.chains.find((chain: { chainId: string }) => chain.chainId === '31337')?.follower.checkpointBlock ?? -1) >= head) break;
      if (tries > 200) throw new Error('the follower did not reach the transfers');
      await sleep(50);
    }
    await sleep(1500);
    const created = await call('POST', '/v1/webhooks', { url: receiver.url, chainId: '31337', eventType: 'address_activity', metadata: { addresses: WATCHED } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const started = await call('POST', `/v1/webhooks/${id}/backfills`, { fromBlock: 0, toBlock: head });
    expect(started.status).toBe(202);
    const backfillPath = `/v1/webhooks/${id}/backfills/${started.body.backfillId}`;

    // Killed once some blocks are recorded and some are not.
    let checkpointBeforeKill = 0;
    for (let tries = 0; ; tries += 1) {
      const { body } = await call('GET', backfillPath);
      checkpointBeforeKill = body.nextBlock;
      if (body.nextBlock > 1) break;
      if (tries > 400) throw new Error(`the backfill did not start: ${JSON.stringify(body)}`);
      await sleep(20);
    }
    await running.killGroup();
    running = undefined;
    const before = new Set(receiver.requests.map((request) => JSON.parse(request.body).messageId as string));
    expect(before.size).toBeLessThan(TRANSFERS);

    running = await startNpmStart(env);
    // Its checkpoint survived the kill: the backfill goes on from there.
    expect((await call('GET', backfillPath)).body.nextBlock).toBeGreaterThanOrEqual(checkpointBeforeKill);
    let ended: any;
    for (let tries = 0; ; tries += 1) {
      ended = (await call('GET', backfillPath)).body;
      if (ended.status !== 'running') break;
      if (tries > 600) throw new Error(`the backfill did not end: ${JSON.stringify(ended)}`);
      await sleep(100);
    }
    expect(ended).toMatchObject({ status: 'completed', nextBlock: head + 1 });
    const deadline = Date.now() + 30_000;
    const receivedHashes = () => new Set(receiver!.requests.map((request) => JSON.parse(request.body).event.transaction.txHash as string));
    while (hashes.some((hash) => !receivedHashes().has(hash)) && Date.now() < deadline) await sleep(100);
    expect([...receivedHashes()].sort()).toEqual([...hashes].sort());
    const log = (await call('GET', `/v1/webhooks/${id}/deliveries?pageSize=100`)).body.deliveries;
    // One message per transfer, all of them the backfill's: none recorded twice, none missing.
    expect(log).toHaveLength(TRANSFERS);
    expect(new Set(log.map((entry: { messageId: string }) => entry.messageId)).size).toBe(TRANSFERS);
    for (const entry of log) expect(entry.backfillId).toBe(started.body.backfillId);
  },
  120_000,
);
