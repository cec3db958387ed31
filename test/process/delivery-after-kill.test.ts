import { readFileSync } from 'node:fs';
import path from 'node:path';
import { apiCaller, freePort, type NpmStart, startNpmStart, stopAfterAll } from '../support/npm-start';
import { startReceiver, type Receiver } from '../support/receiver';
import { useTempDir } from '../support/temp-dir';

const dataDirs = useTempDir('webhooks-delivery-after-kill-');

const MESSAGES = 30;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let running: NpmStart | undefined;
let receiver: Receiver | undefined;
stopAfterAll(() => running, () => receiver);

it(
  'SIGKILL of npm start with messages pending loses none: after a restart each is delivered, once',
  async () => {
    const dataDir = path.join(dataDirs(), 'data');
    const ports = { PORT: String(await freePort()), DYNAMODB_PORT: String(await freePort()) };
    // Retries every 0.3 s: the kill finds messages waiting, being attempted and just recorded.
    const env = { ...ports, DATA_DIR: dataDir, DELIVERY_RETRY_SCHEDULE: Array(50).fill('0.3').join(','), DELIVERY_TIMEOUT_SECONDS: '2', MAX_TEST_NOTIFICATIONS_PER_MINUTE: String(MESSAGES) };
    let accepting = false;
    receiver = await startReceiver(() => (accepting ? { status: 200 } : { status: 500 }));

    running = await startNpmStart(env);
    const key = readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim();
    const call = apiCaller(() => running!.url, key);
    const created = await call('POST', '/v1/webhooks', {
      url: receiver.url,
      chainId: '31337',
      eventType: 'address_activity',
      metadata: { addresses: ['0x' + '11'.repeat(20)] },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;

    const messageIds: string[] = [];
    for (let index = 0; index < MESSAGES; index += 1) {
      const sent = await call('POST', `/v1/webhooks/${id}/test`);
      expect(sent.status).toBe(202);
      messageIds.push(sent.body.messageId);
    }
    await receiver.waitFor(MESSAGES);
    await running.killGroup();
    running = undefined;

    accepting = true;
    const failedBeforeKill = receiver.requests.length;
    running = await startNpmStart(env);
    const deadline = Date.now() + 60_000;
    const succeeded = async () => (await call('GET', `/v1/webhooks/${id}/deliveries?status=succeeded&pageSize=100`)).body.deliveries.length;
    while ((await succeeded()) < MESSAGES) {
      if (Date.now() > deadline) {
        const log = (await call('GET', `/v1/webhooks/${id}/deliveries?pageSize=100`)).body.deliveries;
        const stuck = log.filter((entry: { status: string }) => entry.status !== 'succeeded');
        const missing = messageIds.filter((messageId) => !log.some((entry: { messageId: string }) => entry.messageId === messageId));
        throw new Error(`only ${await succeeded()} of ${MESSAGES} delivered after the restart: ${JSON.stringify({ stuck, missing })}`);
      }
      await sleep(200);
    }

    const answeredOk = receiver.requests.slice(failedBeforeKill).map((request) => JSON.parse(request.body).messageId as string);
    await sleep(1000);
    // Every recorded message arrived after the restart, each exactly once (no fault since then).
    expect(answeredOk.sort()).toEqual([...messageIds].sort());
    expect(receiver.requests.length).toBe(failedBeforeKill + MESSAGES);
  },
  120_000,
);
