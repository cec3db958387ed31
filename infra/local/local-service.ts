import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parsePageTokenKey } from '../../lib/config/page-token-key';
import { runtimeConfig } from '../../lib/config/runtime';
import { routeList } from '../../lib/routes';
import { readKeyFile, writeKeyFile } from './key-file';
import { startDynamoDbProcess, type DynamoDbProcess, type ProcessExit } from './dynamodb-process';
import { ensureTable, portInUse } from './embedded-dynamodb';
import { createLocalGateway } from './gateway';
import { startDeliveryLoop } from './delivery-loop';
import { startMaintenanceLoop } from './maintenance-loop';
import { StartupError } from './startup-error';

export interface LocalServiceOptions {
  /** Gateway port; 0 picks a free one. */
  port: number;
  /** Interface the gateway listens on. */
  host: string;
  /** Embedded DynamoDB port; ignored when DYNAMODB_ENDPOINT points elsewhere. */
  dynamoDbPort: number;
  /** Where the embedded DynamoDB and the page-token key persist; absent keeps everything in memory. */
  dataDir?: string;
}

export interface LocalService {
  url: string;
  dynamoDbEndpoint: string;
  /** The embedded DynamoDB's process; absent when DYNAMODB_ENDPOINT names another store. */
  dynamoDbPid?: number;
  tableCreated: boolean;
  /** Settles if the embedded DynamoDB's process exits while the service runs. */
  storeExit: Promise<ProcessExit>;
  /** Stops taking requests, lets those under way finish, then stops the store (which flushes it). */
  close(): Promise<void>;
}

/**
 * Everything `npm start` runs: the embedded DynamoDB server in a process of its own (unless
 * DYNAMODB_ENDPOINT names one), the table, the local API Gateway on top, and the background work
 * that runs as scheduled functions on AWS. Configuration travels
 * through process.env, which the handlers read like they do on Lambda.
 */
export async function startLocalService(options: LocalServiceOptions): Promise<LocalService> {
  // Checked before anything starts: a bad key must stop the start, not fail every list call later.
  process.env.PAGE_TOKEN_KEY = await pageTokenKeyFor(options.dataDir);
  // The dispatcher runs in this process, so a queued message is lost only with it: after a restart,
  // the sweep takes up what was pending within seconds, not the minutes that suit a lost SQS message.
  process.env.DELIVERY_SWEEP_GRACE_SECONDS ??= '5';
  let dynamoDb: DynamoDbProcess | undefined;
  if (!process.env.DYNAMODB_ENDPOINT) {
    dynamoDb = await startDynamoDbProcess({
      port: options.dynamoDbPort,
      directory: options.dataDir && path.join(options.dataDir, 'dynamodb'),
      owner: { pid: process.pid, name: 'npm start' },
    });
    process.env.DYNAMODB_PORT = String(dynamoDb.port);
  }
  try {
    const config = runtimeConfig();
    const tableCreated = (await ensureTable(config.tableName)) === 'created';
    const gateway = await createLocalGateway({
      routes: routeList,
      stage: config.stage,
      throttle: config.localThrottle,
      authorizerCacheTtlSeconds: config.authorizerCacheTtlSeconds,
    });
    await listen(gateway, options.port, options.host);
    const maintenance = startMaintenanceLoop();
    const delivery = startDeliveryLoop();
    const { port } = gateway.address() as AddressInfo;
    return {
      url: `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`,
      dynamoDbEndpoint: config.dynamoDbEndpoint!,
      dynamoDbPid: dynamoDb?.pid,
      tableCreated,
      storeExit: dynamoDb?.unexpectedExit ?? new Promise(() => undefined),
      close: async () => {
        await new Promise<void>((resolve) => {
          gateway.close(() => resolve());
          gateway.closeIdleConnections();
        });
        await Promise.all([maintenance.stop(), delivery.stop()]);
        await dynamoDb?.close();
      },
    };
  } catch (error) {
    await dynamoDb?.close();
    throw error;
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? portInUse(port, 'PORT') : error));
    server.listen(port, host, () => resolve());
  });
}

/**
 * PAGE_TOKEN_KEY when set; otherwise the key kept beside the data, so that page tokens handed out
 * stay valid across restarts (generated on the first start).
 */
async function pageTokenKeyFor(dataDir: string | undefined): Promise<string> {
  const given = process.env.PAGE_TOKEN_KEY;
  if (given) return checkedPageTokenKey(given, 'PAGE_TOKEN_KEY');
  if (!dataDir) return randomBytes(32).toString('hex');
  const file = path.join(dataDir, 'page-token.key');
  const stored = await readKeyFile(file);
  if (stored !== undefined) {
    return checkedPageTokenKey(stored, `${file}`, 'delete it to make a new one (page tokens handed out before stop working)');
  }
  const key = randomBytes(32).toString('hex');
  await writeKeyFile(file, key);
  return key;
}

function checkedPageTokenKey(hex: string, source: string, remedy?: string): string {
  try {
    parsePageTokenKey(hex, source);
  } catch (error) {
    throw new StartupError(remedy ? `${(error as Error).message}: ${remedy}` : (error as Error).message);
  }
  return hex.trim();
}
