import { randomBytes } from 'node:crypto';
import { ensureTable, startEmbeddedDynamoDb, type EmbeddedDynamoDb } from '../../infra/local/embedded-dynamodb';

/**
 * Starts an in-memory embedded DynamoDB server for the test file and points the process's
 * configuration (read by lib/config like on Lambda) at it. Call at the top level of a test file.
 *
 * With TEST_DYNAMODB_ENDPOINT set (AWS's DynamoDB Local: `npm run test:dynamodb-local`), the tests
 * run against that server instead, in a namespace of the file's own (see env.ts).
 */
export function useEmbeddedStore(env: Record<string, string> = {}): void {
  let store: EmbeddedDynamoDb | undefined;
  beforeAll(async () => {
    const external = process.env.TEST_DYNAMODB_ENDPOINT;
    if (external) {
      process.env.DYNAMODB_ENDPOINT = external;
    } else {
      store = await startEmbeddedDynamoDb({ port: 0 });
      process.env.DYNAMODB_PORT = String(store.port);
      delete process.env.DYNAMODB_ENDPOINT;
    }
    Object.assign(process.env, {
      TABLE_NAME: 'webhooks-test',
      PAGE_TOKEN_KEY: randomBytes(32).toString('hex'),
      STAGE: 'local',
      ...env,
    });
    await ensureTable(process.env.TABLE_NAME!);
  });
  afterAll(async () => {
    await store?.close();
  });
}
