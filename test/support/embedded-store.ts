import { randomBytes } from 'node:crypto';
import { ensureTable, startEmbeddedDynamoDb, type EmbeddedDynamoDb } from '../../infra/local/embedded-dynamodb';

/**
 * Starts an in-memory embedded DynamoDB server for the test file and points the process's
 * configuration (read by lib/config like on Lambda) at it. Call at the top level of a test file.
 */
export function useEmbeddedStore(env: Record<string, string> = {}): { store: () => EmbeddedDynamoDb } {
  let store: EmbeddedDynamoDb | undefined;
  beforeAll(async () => {
    store = await startEmbeddedDynamoDb({ port: 0 });
    Object.assign(process.env, {
      DYNAMODB_PORT: String(store.port),
      TABLE_NAME: 'webhooks-test',
      PAGE_TOKEN_KEY: randomBytes(32).toString('hex'),
      STAGE: 'local',
      ...env,
    });
    delete process.env.DYNAMODB_ENDPOINT;
    await ensureTable('webhooks-test');
  });
  afterAll(async () => {
    await store?.close();
  });
  return { store: () => store! };
}
