import { createServer } from 'node:http';
import { v7 as uuidv7 } from 'uuid';
import { tableName } from '../../lib/store/client';
import { getItem, putItem, queryItems } from '../../lib/store/items';
import { sharedSecretKey, webhookKey, WEBHOOK_SORT_KEY_PREFIX } from '../../lib/store/table';
import { webhookItem } from '../../lib/store/webhooks';

/**
 * The floor for the latency figures: a bare node:http server doing the least work an operation
 * needs on the same store (one GetItem, one Query with the same Limit, one PutItem), with no
 * authentication, validation, middleware or logging. It sends them with the service's own DynamoDB
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
  // The same item the service stores: the fields the API defaults are data every webhook holds,
  // and the status index keys are the table's work for any webhook written, not the service's.
  'POST /create': async (body) => {
    const { url, chainId, eventType, metadata } = JSON.parse(body);
    const webhook = {
      id: uuidv7(),
      url,
      chainId,
      status: 'active' as const,
      createdAt: Math.floor(Date.now() / 1000),
      name: '',
      description: '',
      eventType,
      metadata: { eventSignatures: [], addresses: metadata.addresses },
      includeInternalTxs: false,
      includeLogs: false,
    };
    await putItem({ TableName: tableName(), Item: webhookItem(account, webhook) });
    return webhook;
  },
};

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
