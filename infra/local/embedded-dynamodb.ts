import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { CreateTableCommand, DescribeTableCommand, ResourceNotFoundException, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { createDynamoDbClient } from '../../lib/store/client';
import { tableDefinition } from '../../lib/store/table';

export interface EmbeddedDynamoDb {
  port: number;
  endpoint: string;
  /** Stops accepting requests and closes the LevelDB store, flushing it to disk. */
  close(): Promise<void>;
}

/**
 * dynalite: DynamoDB's wire protocol and validation over LevelDB, in this process. With a
 * directory the data persists there; without one it lives in memory (tests).
 */
export async function startEmbeddedDynamoDb(options: { port: number; directory?: string }): Promise<EmbeddedDynamoDb> {
  const server: Server = dynalite({ path: options.directory, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    endpoint: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}

/** Creates the service's table unless it exists, with the key design of lib/store/table. */
export async function ensureTable(tableName: string): Promise<'created' | 'exists'> {
  const client = createDynamoDbClient();
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return 'exists';
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  await client.send(new CreateTableCommand(tableDefinition(tableName)));
  await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: tableName });
  return 'created';
}
