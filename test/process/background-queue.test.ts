import { readFileSync } from 'node:fs';
import path from 'node:path';
import { apiCaller, freePort, type NpmStart, startNpmStart, stopAfterAll } from '../support/npm-start';
import { startReceiver, type Receiver } from '../support/receiver';
import { useTempDir } from '../support/temp-dir';

const dataDirs = useTempDir('webhooks-background-queue-');

let running: NpmStart | undefined;
let receiver: Receiver | undefined;
stopAfterAll(() => running, () => receiver);

it(
  "messages the API queues reach the background process's dispatcher: a test notification arrives with no sweep to take it up",
  async () => {
    const dataDir = path.join(dataDirs(), 'data');
    // With an hour's grace, the sweep would take the message up an hour from now: only the queue can bring it sooner.
    running = await startNpmStart({ PORT: String(await freePort()), DYNAMODB_PORT: String(await freePort()), DATA_DIR: dataDir, DELIVERY_SWEEP_GRACE_SECONDS: '3600' });
    expect(running.pids.background).not.toBe(running.pids.server);
    receiver = await startReceiver(() => ({ status: 200 }));
    const call = apiCaller(() => running!.url, readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim());
    const created = await call('POST', '/v1/webhooks', { url: receiver.url, chainId: '31337', eventType: 'address_activity', metadata: { addresses: ['0x' + '22'.repeat(20)] } });
    expect(created.status).toBe(201);
    const sent = await call('POST', `/v1/webhooks/${created.body.id}/test`);
    expect(sent.status).toBe(202);
    const [request] = await receiver.waitFor(1);
    expect(JSON.parse(request!.body).messageId).toBe(sent.body.messageId);
  },
  60_000,
);
