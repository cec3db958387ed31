import { readFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { tableName } from '../../lib/store/client';
import { getItem } from '../../lib/store/items';
import { purgeJobKey, webhookAddressKey } from '../../lib/store/table';
import { countAddressItems, itemsNaming, scanTable } from '../support/address-store';
import { apiCaller, freePort, warningsOf, type NpmStart, startNpmStart, stopAfterAll } from '../support/npm-start';
import { useTempDir } from '../support/temp-dir';
import { until } from '../support/until';

const dataDirs = useTempDir('webhooks-purge-after-kill-');

// Ten pages of the purge: the kill lands in the middle of it.
const ADDRESSES = 10_000;
const PER_CALL = 10_000;
const TABLE = 'webhooks-purge-after-kill';

let running: NpmStart | undefined;
stopAfterAll(() => running);

it(
  'a purge cut off by a SIGKILL of npm start is finished after a restart: nothing of the webhook is left',
  async () => {
    const started = Date.now();
    const lap = (label: string) => process.stdout.write(`${label}: ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    const dataDir = path.join(dataDirs(), 'data');
    // The same ports for both runs, so that this process's store client (lib/store/client) reaches either.
    const ports = { PORT: String(await freePort()), DYNAMODB_PORT: String(await freePort()) };
    Object.assign(process.env, { DYNAMODB_PORT: ports.DYNAMODB_PORT, DYNAMODB_CREDENTIAL_FILE: path.join(dataDir, 'store-credential'), TABLE_NAME: TABLE });
    delete process.env.DYNAMODB_ENDPOINT;
    // The first run's lease is short enough that the restart does not wait long for the killed run's purge
    // lease, and long enough that an add of 10 000 addresses renews it in time on a loaded machine.
    const env = { ...ports, DATA_DIR: dataDir, TABLE_NAME: TABLE, LEASE_SECONDS: '5' };

    running = await startNpmStart(env);
    const key = readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim();
    const call = apiCaller(() => running!.url, key);

    const addresses = Array.from({ length: ADDRESSES }, () => `0x${randomBytes(20).toString('hex')}`);
    expect(new Set(addresses).size).toBe(ADDRESSES);
    const created = await call('POST', '/v1/webhooks', {
      url: 'https://receiver.example.com/hooks',
      chainId: '31337',
      eventType: 'address_activity',
      metadata: { addresses: [addresses[0]] },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    for (let start = 0; start < ADDRESSES; start += PER_CALL) {
      const added = await call('PATCH', `/v1/webhooks/${id}/addresses`, { addresses: addresses.slice(start, start + PER_CALL) });
      if (added.status !== 200) {
        throw new Error(`the add answered ${added.status} ${JSON.stringify(added.body)}; npm start's warnings:\n${warningsOf(running)}`);
      }
    }
    lap(`${ADDRESSES} addresses added`);
    const listed = await call('GET', `/v1/webhooks/${id}/addresses?pageSize=1`);
    expect(listed.body.totalAddresses).toBe(ADDRESSES);
    expect(await countAddressItems('dev', id)).toBe(ADDRESSES);

    const deleted = await call('DELETE', `/v1/webhooks/${id}?permanent=true`);
    expect(deleted.status).toBe(200);

    // The purge goes in address order: once the first address's item is gone, it is under way.
    const first = [...addresses].sort()[0]!;
    await until(
      'the purge has started',
      30_000,
      () => getItem({ TableName: tableName(), Key: webhookAddressKey('dev', id, first), ConsistentRead: true }),
      (item) => item === undefined,
    );
    const whenKilled = await countAddressItems('dev', id);
    lap(`purge under way (${whenKilled} address items left)`);
    expect(whenKilled).toBeLessThan(ADDRESSES);
    expect(whenKilled).toBeGreaterThan(0);

    await running.killGroup();
    lap('killed');
    expect(await countAddressItems('dev', id).catch(() => 'store down')).toBe('store down');

    // The killed run's purge lease (5 s) expires first; a shorter lease after the restart.
    running = await startNpmStart({ ...env, LEASE_SECONDS: '2' });
    lap('restarted');
    const afterRestart = await countAddressItems('dev', id);
    expect(afterRestart).toBeGreaterThan(0);
    expect(afterRestart).toBeLessThanOrEqual(whenKilled);

    await until(
      'the purge job is done',
      120_000,
      () => getItem({ TableName: tableName(), Key: purgeJobKey(id), ConsistentRead: true }),
      (job) => job === undefined,
      500,
    );
    lap('purge done');

    const items = await scanTable();
    expect(itemsNaming(items, id)).toEqual([]);
    expect(items.filter((item) => String(item.pk).startsWith('WATCH#')).length).toBe(0);
    expect(items.filter((item) => item.pk === 'PURGES' || item.gsi1pk === 'ADDRESS_CHANGES')).toEqual([]);
    expect(running.output()).not.toContain('address maintenance pass failed');
  },
  // About 30 s on a 2-core machine: the purge deletes some 400-800 addresses a second there.
  180_000,
);
