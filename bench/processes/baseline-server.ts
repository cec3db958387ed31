import { createServer } from 'node:http';
import { v7 as uuidv7 } from 'uuid';
import { tableName } from '../../lib/store/client';
import { writeItems } from '../../lib/store/batch';
import { getItem, queryItems } from '../../lib/store/items';
import { sharedSecretKey, webhookAddressKey, webhookKey, webhookPointerKey, WEBHOOK_SORT_KEY_PREFIX } from '../../lib/store/table';
import { headWrites, watcherWrites } from '../../lib/store/watch-index';
import { webhookItem } from '../../lib/store/webhooks';

/**
 * The floor for the latency figures: a bare node:http server doing the least work an operation
 * needs on the same store (one GetItem, one Query with the same Limit, two BatchWriteItems in
 * order), with no authentication, validation, middleware or logging. It sends them with the service's own DynamoDB
 * client and item conversion (lib/store/items), so that what the SDK costs (and what the service
 * saves on it) counts on both sides alike.
 */
const account = process.env.BENCH_ACCOUNT!;

const operations: Record<string, (body: string) => Promise<unknown>> = {
  'GET /secret': () => getItem({ TableName: tableName(), Key: sharedSecretKey(account), ConsistentRead: true }),
  'GET /list': async () =>
    (
      await queryItems({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': webhookKey(account, '').pk, ':prefix': WEBHOOK_SORT_KEY_PREFIX },
        ScanIndexForward: false,
        ConsistentRead: true,
        Limit: 11,
      })
    ).items,
  // The same items the service stores: the webhook (the fields the API defaults are data every
  // webhook holds), its pointer and, per address, its item and the matcher's two index items. A
  // head may be written only once its watcher is (a removal by another webhook deletes a head it
  // finds without watchers), so a correct create takes two batches, one after the other.
  'POST /create': (body) => createWebhook(body, 'ordered'),
  // The same items in one batch: no target is set against it (see bench/README.md).
  'POST /create-one-batch': (body) => createWebhook(body, 'one batch'),
};

async function createWebhook(body: string, writes: 'ordered' | 'one batch') {
  const { url, chainId, eventType, metadata } = JSON.parse(body);
  const webhook = {
    id: uuidv7(),
    url,
    chainId,
    status: 'active' as const,
    createdAt: Date.now(),
    name: '',
    description: '',
    eventType,
    metadata: { eventSignatures: [], addresses: metadata.addresses as string[] },
    includeInternalTxs: false,
    includeLogs: false,
  };
  const addresses = webhook.metadata.addresses;
  const first = [
    { put: { ...webhookPointerKey(webhook.id), account } },
    ...addresses.map((address) => ({ put: { ...webhookAddressKey(account, webhook.id, address) } })),
    ...watcherWrites(chainId, webhook.id, addresses, 'add'),
  ];
  const second = [...headWrites(chainId, addresses), { put: webhookItem(account, webhook, addresses.length) }];
  if (writes === 'one batch') await writeItems([...first, ...second]);
  else {
    await writeItems(first);
    await writeItems(second);
  }
  return webhook;
}

/**
 * `?busyMicros=N` adds N µs of busy-waiting to the request, for the latency section's yardstick. It
 * is this same warm process that serves it because a second one, freshly started, is not comparable:
 * in one run it spent 387 µs a request with no busy-wait at all, against this one's 271.
 */
function busyWait(micros: number) {
  const until = performance.now() + micros / 1000;
  while (performance.now() < until);
}

const server = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    const [path, query] = request.url!.split('?', 2);
    const operation = operations[`${request.method} ${path}`];
    if (!operation) {
      response.writeHead(404).end();
      return;
    }
    if (query) busyWait(Number(new URLSearchParams(query).get('busyMicros')));
    operation(body).then(
      (result) => {
        const json = JSON.stringify(result ?? {});
        response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(json) }).end(json);
      },
      () => response.writeHead(500).end(),
    );
  });
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address() as { port: number };
  process.stdout.write(`baseline listening on http://127.0.0.1:${address.port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
