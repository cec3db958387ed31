import { readFileSync } from 'node:fs';
import path from 'node:path';
import { apiCaller, freePort, type NpmStart, startNpmStart, stopAfterAll } from '../support/npm-start';
import { useTempDir } from '../support/temp-dir';

const dataDirs = useTempDir('webhooks-own-ports-');

let running: NpmStart | undefined;
stopAfterAll(() => running);

it(
  "npm start's gateway processes refuse its own ports as targets, and its background process refuses them when sending",
  async () => {
    const dataDir = path.join(dataDirs(), 'data');
    const ports = { PORT: String(await freePort()), DYNAMODB_PORT: String(await freePort()), DEV_CHAIN_PORT: String(await freePort()) };
    running = await startNpmStart({ ...ports, DATA_DIR: dataDir, DELIVERY_RETRY_SCHEDULE: '' });
    const call = apiCaller(() => running!.url, readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim());
    const webhook = (url: string) => ({ url, chainId: '31337', eventType: 'address_activity', metadata: { addresses: ['0x' + '22'.repeat(20)] } });

    for (const port of Object.values(ports)) {
      const refused = await call('POST', '/v1/webhooks', webhook(`http://127.0.0.1:${port}/`));
      expect(refused).toEqual({ status: 400, body: expect.objectContaining({ message: expect.stringContaining(`port ${port}, one of the service's own ports`) }) });
    }

    for (const port of Object.values(ports)) {
      const refused = await call('POST', '/v1/webhooks', webhook(`http://localhost:${port}/`));
      expect(refused).toEqual({ status: 400, body: expect.objectContaining({ message: expect.stringContaining(`localhost port ${port}, one of the service's own ports`) }) });
    }

    // A webhook whose port becomes one of the service's own (the next start's API port) is refused by the background process, before any socket.
    const laterPort = String(await freePort());
    const created = await call('POST', '/v1/webhooks', webhook(`http://localhost:${laterPort}/`));
    expect(created.status).toBe(201);
    await running.killGroup();
    running = await startNpmStart({ ...ports, PORT: laterPort, DATA_DIR: dataDir, DELIVERY_RETRY_SCHEDULE: '' });
    const sent = await call('POST', `/v1/webhooks/${created.body.id}/test`);
    expect(sent.status).toBe(202);
    let entry: any;
    do {
      await new Promise((resolve) => setTimeout(resolve, 100));
      entry = (await call('GET', `/v1/webhooks/${created.body.id}/deliveries/${sent.body.messageId}`)).body;
    } while (entry.status === 'pending');
    expect(entry.lastError).toBe(`target refused: localhost port ${laterPort}, one of the service's own ports`);
  },
  90_000,
);
