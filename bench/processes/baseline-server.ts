import { createServer } from 'node:http';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { v7 as uuidv7 } from 'uuid';

/**
 * The floor for the latency figures: a bare node:http server doing the least work an operation
 * needs on the same store (one GetItem, one Query with the same Limit, one PutItem), with no
 * authentication, validation, middleware or logging.
 */
const tableName = process.env.TABLE_NAME!;
const account = process.env.BENCH_ACCOUNT!;
const client = DynamoDBDocumentClient.from(
  new DynamoDBClient({ endpoint: process.env.DYNAMODB_ENDPOINT, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }),
);

const operations: Record<string, (body: string) => Promise<unknown>> = {
  'GET /secret': async () =>
    (await client.send(new GetCommand({ TableName: tableName, Key: { pk: `ACCOUNT#${account}`, sk: 'SECRET' }, ConsistentRead: true }))).Item,
  'GET /list': async () =>
    (
      await client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: { ':pk': `ACCOUNT#${account}`, ':prefix': 'WEBHOOK#' },
          ScanIndexForward: false,
          ConsistentRead: true,
          Limit: 11,
        }),
      )
    ).Items,
  // The same item the service stores, keys for the status index included: that index is the
  // table's work for any webhook written, not overhead of the service.
  'POST /create': async (body) => {
    const item = { ...JSON.parse(body), id: uuidv7(), status: 'active' };
    await client.send(
      new PutCommand({
        TableName: tableName,
        Item: { pk: `ACCOUNT#${account}`, sk: `WEBHOOK#${item.id}`, gsi1pk: `ACCOUNT#${account}#WEBHOOKS#active`, gsi1sk: `WEBHOOK#${item.id}`, ...item },
      }),
    );
    return item;
  },
};

const server = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    const operation = operations[`${request.method} ${request.url}`];
    if (!operation) {
      response.writeHead(404).end();
      return;
    }
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
