import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { startEmbeddedDynamoDb, ensureTable, type EmbeddedDynamoDb } from '../../../infra/local/embedded-dynamodb';
import { runAddressMaintenance } from '../../../lib/addresses/maintenance';
import { asEntryPoint, BACKGROUND_FUNCTIONS } from '../../../lib/entry-point';
import { routes } from '../../../lib/routes';
import { findActiveWatchers } from '../../../lib/addresses/watchers';
import { createAccountUsage } from '../../../lib/store/account-usage';
import { getAddressChange } from '../../../lib/store/addresses';
import { getWebhook, createWebhook } from '../../../lib/webhooks/webhooks';
import { headsOf } from '../../support/address-store';
import { randomAccount } from '../../support/factories';

/**
 * DynamoDB leaves part of a batch unprocessed under throttling, which the embedded store never does:
 * a proxy on loopback in front of it plays that part. For the BatchWriteItem requests it is told to,
 * it passes on only the webhook's item and answers the rest as UnprocessedItems. Every other request
 * goes through as it is.
 */
let store: EmbeddedDynamoDb;
let proxy: Server;
let unprocessed: 'none' | 'once' | 'always' = 'none';
const targets: string[] = [];

function forward(body: string, headers: Record<string, string>, port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const upstream = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 500, body: Buffer.concat(chunks).toString() }));
    });
    upstream.on('error', reject);
    upstream.end(body);
  });
}

beforeAll(async () => {
  store = await startEmbeddedDynamoDb({ port: 0 });
  proxy = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      let body = Buffer.concat(chunks).toString();
      const target = String(request.headers['x-amz-target'] ?? '');
      targets.push(target.split('.')[1] ?? target);
      const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
      const parsed = target.endsWith('BatchWriteItem') ? JSON.parse(body) : undefined;
      const [table, writes] = parsed ? (Object.entries(parsed.RequestItems)[0] as [string, any[]]) : ['', []];
      const withWebhook = writes.some((write) => write.PutRequest?.Item?.sk?.S?.startsWith('WEBHOOK#'));
      if (unprocessed !== 'none' && withWebhook) {
        if (unprocessed === 'once') unprocessed = 'none';
        const kept = writes.filter((write) => write.PutRequest?.Item?.sk?.S?.startsWith('WEBHOOK#'));
        await forward(JSON.stringify({ RequestItems: { [table]: kept } }), headers, store.port);
        const left = writes.filter((write) => !kept.includes(write));
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        response.end(JSON.stringify({ UnprocessedItems: { [table]: left } }));
        return;
      }
      if (unprocessed === 'always' && parsed && writes.every((write) => write.PutRequest?.Item?.sk?.S === '#')) {
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        response.end(JSON.stringify({ UnprocessedItems: { [table]: writes } }));
        return;
      }
      const answer = await forward(body, headers, store.port);
      response.writeHead(answer.status, { 'content-type': 'application/x-amz-json-1.0' });
      response.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  Object.assign(process.env, {
    DYNAMODB_PORT: String((proxy.address() as AddressInfo).port),
    TABLE_NAME: 'webhooks-unprocessed-test',
    PAGE_TOKEN_KEY: randomBytes(32).toString('hex'),
    STAGE: 'local',
    LEASE_SECONDS: '1',
  });
  delete process.env.DYNAMODB_ENDPOINT;
  await ensureTable(process.env.TABLE_NAME!);
});

afterAll(async () => {
  await new Promise((resolve) => proxy.close(resolve));
  await store.close();
});

const input = (address: string) => ({
  url: 'https://receiver.example.com/hooks',
  chainId: '43114',
  eventType: 'address_activity' as const,
  metadata: { addresses: [address], eventSignatures: [] },
  name: '',
  description: '',
  includeInternalTxs: false,
  includeLogs: false,
});

/** The creation as POST /v1/webhooks's function makes it: the calls of this path, taken only under throttling, are held against its grant (test/support/aws-calls.ts). */
const createdAsTheFunction = (account: string, address: string) => asEntryPoint(routes.createWebhook.operationId, () => createWebhook(account, input(address)));

describe('creating a webhook when DynamoDB leaves its heads unprocessed', () => {
  it('records the creation as a change before sending them again, and deletes the record once they are written', async () => {
    const account = randomAccount();
    const address = `0x${randomBytes(20).toString('hex')}`;
    await createAccountUsage(account);
    unprocessed = 'once';
    targets.length = 0;
    const webhook = await createdAsTheFunction(account, address);
    // The webhook's slot in its account's usage first (docs/limits.md).
    expect(targets).toEqual(['UpdateItem', 'BatchWriteItem', 'BatchWriteItem', 'PutItem', 'BatchWriteItem', 'DeleteItem']);
    expect((await headsOf('43114', [address])).has(address)).toBe(true);
    expect(await getAddressChange(account, webhook.id)).toBeUndefined();
    expect((await findActiveWatchers('43114', [address])).matches.get(address)).toEqual([webhook.id]);
  });

  it('leaves a record that maintenance completes when the heads never get written (the creation cut off)', async () => {
    const account = randomAccount();
    const address = `0x${randomBytes(20).toString('hex')}`;
    unprocessed = 'always';
    await expect(createdAsTheFunction(account, address)).rejects.toMatchObject({ statusCode: 503 });
    unprocessed = 'none';
    // The webhook's item went through; its head did not: the matcher would miss the address.
    const [change] = await Promise.all([getAddressChange(account, (await lastWebhookOf(account)).id)]);
    expect(change).toMatchObject({ kind: 'add', addresses: [address], delta: 0 });
    expect((await headsOf('43114', [address])).has(address)).toBe(false);

    await new Promise((resolve) => setTimeout(resolve, 2_100)); // two leases: the sweep's wait
    expect(await asEntryPoint(BACKGROUND_FUNCTIONS.maintainAddresses, () => runAddressMaintenance(Date.now() + 5_000))).toMatchObject({ changesCompleted: 1 });
    expect((await headsOf('43114', [address])).has(address)).toBe(true);
    expect(await getAddressChange(account, change!.webhookId)).toBeUndefined();
    expect((await getWebhook(account, change!.webhookId)).metadata.addresses).toEqual([address]);
  }, 30_000);
});

async function lastWebhookOf(account: string) {
  const { listWebhooks } = await import('../../../lib/webhooks/webhooks');
  const { webhooks } = await listWebhooks(account, { pageSize: 1 });
  return webhooks[0]!;
}
