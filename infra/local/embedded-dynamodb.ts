import { readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { CreateTableCommand, DescribeTableCommand, ResourceNotFoundException, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { Level } from 'level';
import { createDynamoDbClient } from '../../lib/store/client';
import { indexInternalTxWebhooks } from '../../lib/store/layout-moves';
import { moveMessagesToStatusIndex, spreadMessagePartitions } from '../../lib/store/messages';
import { tableDefinition } from '../../lib/store/table';
import { readKeyFile } from './key-file';
import { StartupError } from './startup-error';
import { guardStore, type StoreCredential } from './store-guard';

export interface EmbeddedDynamoDb {
  port: number;
  endpoint: string;
  /** Stops accepting requests and closes the LevelDB store, flushing it to disk. */
  close(): Promise<void>;
}

export interface EmbeddedDynamoDbOptions {
  /** 0 picks a free port. */
  port: number;
  /** Where the data persists; absent keeps it in memory (tests). */
  directory?: string;
  /** Names the port in a "port in use" message: the variable that sets it. */
  portVariable?: string;
  /** Who holds the directory while this runs, for the message another process gets: `npm start`'s pid and name. */
  owner?: { pid: number; name: string };
  /** What to do when another process holds the directory; by default, stop it or use another DATA_DIR. */
  whenInUse?: string;
  /**
   * The file holding the credential every request must be signed with (DATA_DIR's, see data-dir.ts);
   * absent, any request but a browser's is served (in-memory stores of tests and of the bench).
   */
  credentialFile?: string;
}

const STORE_MAX_CONNECTIONS = 1024;

/**
 * dynalite: DynamoDB's wire protocol and validation over LevelDB, in this process. The data
 * directory is opened once first: dynalite opens it lazily and turns a failure into "Database is
 * closed" on every request, where the user needs to know that another process holds it or that it
 * is corrupted.
 */
export async function startEmbeddedDynamoDb(options: EmbeddedDynamoDbOptions): Promise<EmbeddedDynamoDb> {
  if (options.directory) await checkDataDirectory(options.directory, options.whenInUse ?? 'stop it, or give this one its own DATA_DIR');
  const credential = options.credentialFile ? await storeCredentialIn(options.credentialFile) : undefined;
  const server: Server = dynalite({ path: options.directory, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  guardStore(server, credential);
  // Bounds on what a local process can hold open: the service's clients keep at most a few hundred
  // sockets (50 per process), and their requests arrive whole in milliseconds.
  server.maxConnections = STORE_MAX_CONNECTIONS;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? portInUse(options.port, options.portVariable ?? 'DYNAMODB_PORT') : error),
    );
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  const ownerFile = options.directory && ownerFileOf(options.directory);
  if (ownerFile) await writeFile(ownerFile, JSON.stringify(options.owner ?? { pid: process.pid, name: 'a process' }));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    endpoint: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      if (ownerFile) await rm(ownerFile, { force: true });
    },
  };
}

/** The secret the store's requests are signed with, as the store and the delivery queue's endpoint check them. */
export async function storeCredentialIn(file: string): Promise<StoreCredential> {
  const secret = await readKeyFile(file);
  if (!secret) throw new StartupError(`the store's credential file ${file} is missing or empty`);
  return { secret, file };
}

export function portInUse(port: number, variable: string): StartupError {
  return new StartupError(`port ${port} is in use by another process: stop it, or set ${variable} to another port`);
}

/** Beside the directory, not in it: LevelDB owns what is inside. */
const ownerFileOf = (directory: string) => `${directory}.owner.json`;

/**
 * How long a start waits for a data directory whose owner has died: its store process, which
 * outlives a kill of `npm start` to finish its writes, still holds it for a moment.
 */
const ORPHANED_STORE_WAIT_MS = 5_000;

async function checkDataDirectory(directory: string, whenInUse: string): Promise<void> {
  const deadline = Date.now() + ORPHANED_STORE_WAIT_MS;
  for (;;) {
    const db = new Level(directory);
    try {
      await db.open();
      return;
    } catch (error) {
      const locked = ((error as LevelError).cause ?? (error as LevelError)).code === 'LEVEL_LOCKED';
      if (!locked || Date.now() > deadline || (await liveOwner(directory))) throw await dataDirectoryError(directory, error as LevelError, whenInUse);
    } finally {
      await db.close();
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** abstract-level's open error, with the underlying error (its `code` says which) as the cause. */
type LevelError = Error & { code?: string; cause?: LevelError };

async function dataDirectoryError(directory: string, error: LevelError, whenInUse: string): Promise<StartupError> {
  const cause = error.cause ?? error;
  if (cause.code === 'LEVEL_LOCKED') {
    const owner = await liveOwner(directory);
    return new StartupError(
      `data directory ${directory} is in use by another process${owner ? ` (pid ${owner.pid}, ${owner.name})` : ''}: ${whenInUse}`,
    );
  }
  return corrupted(directory, cause.message);
}

/**
 * A LevelDB error met while serving a request: a table file damaged (truncated, overwritten) is
 * found only when a request reads it, and dynalite throws the error out of its request callback.
 * Undefined for any other error.
 */
export function dataDirectoryReadError(directory: string, error: unknown): StartupError | undefined {
  const code = (error as LevelError | undefined)?.code;
  return typeof code === 'string' && code.startsWith('LEVEL_') ? corrupted(directory, (error as Error).message) : undefined;
}

const corrupted = (directory: string, what: string) => new StartupError(`data directory ${directory} is corrupted: ${what}. Move it away to start fresh`);

/** The process recorded as holding the directory, if it is still running. */
async function liveOwner(directory: string): Promise<{ pid: number; name: string } | undefined> {
  try {
    const owner = JSON.parse(await readFile(ownerFileOf(directory), 'utf8')) as { pid: number; name: string };
    process.kill(owner.pid, 0);
    return owner;
  } catch {
    return undefined;
  }
}

/**
 * Creates the service's table unless it exists, with the key design of lib/store/table. A table made
 * by an earlier version without one of its indexes is refused: nothing would be listed in it. One
 * made before messages' status moved to gsi2 has its messages moved there, once.
 */
export async function ensureTable(tableName: string): Promise<'created' | 'exists'> {
  const client = createDynamoDbClient();
  const definition = tableDefinition(tableName);
  try {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const indexes = new Set(Table?.GlobalSecondaryIndexes?.map((index) => index.IndexName));
    const missing = definition.GlobalSecondaryIndexes.map((index) => index.IndexName).filter((name) => !indexes.has(name));
    if (missing.length > 0) {
      throw new StartupError(
        `table ${tableName} was made by an earlier version of the service and lacks the index ${missing.join(', ')}: move the data directory away (or use another TABLE_NAME) to start fresh`,
      );
    }
    await moveMessagesToStatusIndex(client, tableName, { created: false });
    await spreadMessagePartitions(client, tableName, { created: false });
    await indexInternalTxWebhooks(client, tableName, { created: false });
    return 'exists';
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  await client.send(new CreateTableCommand(definition));
  await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: tableName });
  await moveMessagesToStatusIndex(client, tableName, { created: true });
  await spreadMessagePartitions(client, tableName, { created: true });
  await indexInternalTxWebhooks(client, tableName, { created: true });
  return 'created';
}
