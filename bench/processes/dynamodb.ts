import { startEmbeddedDynamoDb } from '../../infra/local/embedded-dynamodb';

/** The embedded DynamoDB server in a process of its own, in memory, so that every server under test talks to it alike. */
async function main() {
  const store = await startEmbeddedDynamoDb({ port: Number(process.env.DYNAMODB_PORT ?? 0) });
  process.stdout.write(`dynamodb listening on ${store.endpoint}\n`);
  const stop = () => void store.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

void main();
