import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { runtimeConfig } from '../../lib/config/runtime';
import { routeList } from '../../lib/routes';
import { ensureTable, startEmbeddedDynamoDb, type EmbeddedDynamoDb } from './embedded-dynamodb';
import { createLocalGateway } from './gateway';

export interface LocalServiceOptions {
  /** Gateway port; 0 picks a free one. */
  port: number;
  /** Embedded DynamoDB port; ignored when DYNAMODB_ENDPOINT points elsewhere. */
  dynamoDbPort: number;
  /** Where the embedded DynamoDB and the page-token key persist; absent keeps everything in memory. */
  dataDir?: string;
}

export interface LocalService {
  url: string;
  dynamoDbEndpoint: string;
  tableCreated: boolean;
  /** Stops taking requests, lets those under way finish, then flushes and closes the store. */
  close(): Promise<void>;
}

/**
 * Everything `npm start` runs: the embedded DynamoDB server (unless DYNAMODB_ENDPOINT names one),
 * the table, and the local API Gateway on top. Configuration travels through process.env, which
 * the handlers read like they do on Lambda.
 */
export async function startLocalService(options: LocalServiceOptions): Promise<LocalService> {
  let dynamoDb: EmbeddedDynamoDb | undefined;
  if (!process.env.DYNAMODB_ENDPOINT) {
    dynamoDb = await startEmbeddedDynamoDb({
      port: options.dynamoDbPort,
      directory: options.dataDir && path.join(options.dataDir, 'dynamodb'),
    });
    process.env.DYNAMODB_PORT = String(dynamoDb.port);
  }
  process.env.PAGE_TOKEN_KEY ||= await pageTokenKeyFor(options.dataDir);
  const config = runtimeConfig();
  const tableCreated = (await ensureTable(config.tableName)) === 'created';
  const gateway = await createLocalGateway({
    routes: routeList,
    stage: config.stage,
    throttle: config.localThrottle,
    authorizerCacheTtlSeconds: config.authorizerCacheTtlSeconds,
  });
  await listen(gateway, options.port);
  const { port } = gateway.address() as AddressInfo;
  return {
    url: `http://localhost:${port}`,
    dynamoDbEndpoint: config.dynamoDbEndpoint!,
    tableCreated,
    close: async () => {
      await new Promise<void>((resolve) => {
        gateway.close(() => resolve());
        gateway.closeIdleConnections();
      });
      await dynamoDb?.close();
    },
  };
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => resolve());
  });
}

/** Kept beside the data so that page tokens handed out stay valid across restarts. */
async function pageTokenKeyFor(dataDir: string | undefined): Promise<string> {
  if (!dataDir) return randomBytes(32).toString('hex');
  const file = path.join(dataDir, 'page-token.key');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = randomBytes(32).toString('hex');
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return key;
}
