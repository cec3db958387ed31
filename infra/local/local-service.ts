import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parsePageTokenKey } from '../../lib/config/page-token-key';
import { readRuntimeConfig, useRuntimeConfig, type RuntimeConfig } from '../../lib/config/runtime';
import { routeList } from '../../lib/routes';
import { readKeyFile, writeKeyFile } from './key-file';
import { startDynamoDbProcess, type DynamoDbProcess, type StoreExit } from './dynamodb-process';
import { ensureTable, portInUse, startEmbeddedDynamoDb, type EmbeddedDynamoDbOptions } from './embedded-dynamodb';
import { ensureConsoleBuilt } from '../console-build';
import { createLocalGateway } from './gateway';
import { startBackgroundProcess, type BackgroundProcess } from './background-process';
import { startGatewayProcesses, type GatewayProcesses } from './gateway-processes';
import { TokenBucketThrottle } from './token-bucket';
import { startBackgroundWork, type BackgroundWork } from './background-work';
import { findAnvil, startDevChain, type DevChain, type DevChainOptions } from './dev-chain';
import { ensureStoreCredential, makeDataDirPrivate } from './data-dir';
import { localLogger as logger } from './local-logger';
import { chainsFromEnvironment, devChainSettings, publicFacts, publicFactsOf, type ChainSettings } from '../../lib/config/chains';
import { localQueueUrl } from './queue-endpoint';
import { freePortOn, servicePorts } from './service-ports';
import { StartupError } from './startup-error';
import type { ProcessExit } from './supervisor';

export interface LocalServiceOptions {
  /** The settings the user gave (`npm start`'s environment), read once here. */
  env: NodeJS.ProcessEnv;
  /** Gateway port; 0 picks a free one. */
  port: number;
  /** Interface the gateway listens on. */
  host: string;
  /** Embedded DynamoDB port; ignored when the env's DYNAMODB_ENDPOINT points elsewhere. */
  dynamoDbPort: number;
  /** Where the embedded DynamoDB, the dev chain and the page-token key persist; absent keeps everything in memory. */
  dataDir?: string;
  /** The local EVM node to start and follow; absent starts none. */
  devChain?: Omit<DevChainOptions, 'stateDirectory'>;
  /** Chains to follow besides the dev chain and those of CHAIN_RPC_URLS (tests follow a node they run). */
  chains?: ChainSettings[];
  /** Chain ids the API takes as followed though nothing follows them here (tests of the API alone create webhooks on 43114 or 1). */
  chainsWithoutFollower?: string[];
  /**
   * Where the API, the background work and the embedded store run: `npm start` gives the gateway
   * `gateways` processes, the background work one and the store one; tests keep all three in theirs,
   * where their hooks (the delivery guard's, say) see them, and start no process per test file.
   */
  processes: { gateways: number } | 'this process';
}

export interface LocalService {
  url: string;
  dynamoDbEndpoint: string;
  /** The embedded DynamoDB's process; absent when DYNAMODB_ENDPOINT names another store. */
  dynamoDbPid?: number;
  tableCreated: boolean;
  /** The dev chain's node, when one was asked for and could start. */
  devChain?: { rpcUrl: string; chainId: string; pid: number };
  /** Settles if the dev chain's keeper exits while the service runs (anvil gone, or the keeper killed). */
  devChainExit: Promise<ProcessExit>;
  /** Settles if the embedded DynamoDB's process exits while the service runs. */
  storeExit: Promise<StoreExit>;
  /** The error to report instead of `error` when the store's process stopped for a reason the user can act on. */
  explained(error: unknown): unknown;
  /** The gateway's processes, when it has its own. */
  gatewayPids?: number[];
  /** Settles if one of the gateway's processes exits while the service runs. */
  gatewayExit: Promise<ProcessExit & { pid: number }>;
  /** The background work's process, when it has one. */
  backgroundPid?: number;
  /** Settles if the background work's process exits while the service runs. */
  backgroundExit: Promise<ProcessExit>;
  /** Stops taking requests, lets those under way finish, then stops the store (which flushes it). */
  close(): Promise<void>;
}

/**
 * The delivery queue runs beside the API, in memory, so a queued message is lost only with it: after a restart,
 * the sweep takes up what was pending within seconds, not the minutes that suit a lost SQS message.
 */
const LOCAL_SWEEP_GRACE_SECONDS = 5;

/**
 * Everything `npm start` runs: the embedded DynamoDB server in a process of its own (unless
 * DYNAMODB_ENDPOINT names one), the table, the local API Gateway on top, and the background work
 * that runs as scheduled and queue-driven functions on AWS. The configuration is built once here,
 * installed in this process and handed to the others in their `start` message.
 */
export async function startLocalService(options: LocalServiceOptions): Promise<LocalService> {
  const { env } = options;
  // Built (when its sources changed) while the store and the dev chain start, and awaited before the
  // gateway serves it; its failure is reported there, and is no unhandled rejection if a step before fails.
  const consoleBuilt = ensureConsoleBuilt();
  consoleBuilt.catch(() => undefined);
  if (options.dataDir) {
    const tightened = await makeDataDirPrivate(options.dataDir);
    if (tightened > 0) logger.warn('made DATA_DIR private: files and directories open to other users are now 0600 and 0700', { dataDir: options.dataDir, tightened });
  }
  // Checked before anything starts: a bad key must stop the start, not fail every list call later.
  const pageTokenKey = await pageTokenKeyFor(env.PAGE_TOKEN_KEY, options.dataDir);
  const chains = [...chainsFromEnvironment(env), ...(options.chains ?? [])];
  const given = readRuntimeConfig(env);
  let dynamoDb: DynamoDbProcess | undefined;
  // A request that failed because the store's process stopped: the store said why.
  const explained = (error: unknown) => dynamoDb?.failure() ?? error;
  let devChain: DevChain | undefined;
  let gateway: RunningGateway | undefined;
  let background: BackgroundProcess | undefined;
  let credentialFile: string | undefined;
  if (!env.DYNAMODB_ENDPOINT) {
    credentialFile = options.dataDir && (await ensureStoreCredential(options.dataDir));
    const storeOptions = {
      port: options.dynamoDbPort,
      directory: options.dataDir && path.join(options.dataDir, 'dynamodb'),
      owner: { pid: process.pid, name: 'npm start' },
      credentialFile,
    };
    dynamoDb = options.processes === 'this process' ? await startStoreHere(storeOptions) : await startDynamoDbProcess(storeOptions);
  }
  try {
    if (options.devChain) {
      devChain = await startLocalDevChain({ ...options.devChain, stateDirectory: options.dataDir && path.join(options.dataDir, 'dev-chain') });
      if (devChain) chains.unshift(devChainSettings(options.devChain.chainId, devChain.rpcUrl));
    }
    // Every port is known before the configuration is built and the other processes start.
    const gatewayPort = options.port || (await freePortOn(options.host));
    // The background work's queue takes the API's messages there, as SQS does on AWS.
    const queuePort = await freePortOn('127.0.0.1');
    const config: RuntimeConfig = {
      ...given,
      ...(dynamoDb && { dynamoDbEndpoint: dynamoDb.endpoint, dynamoDbCredentialFile: credentialFile, storeDeletesExpiredItems: false }),
      pageTokenKey: { hex: pageTokenKey },
      delivery: { ...given.delivery, sweepGraceSeconds: env.DELIVERY_SWEEP_GRACE_SECONDS === undefined ? LOCAL_SWEEP_GRACE_SECONDS : given.delivery.sweepGraceSeconds },
      deliveryQueueUrl: localQueueUrl(queuePort),
      followedChains: [...chains.map(publicFacts), ...(options.chainsWithoutFollower ?? []).map(publicFactsOf)],
      loopbackTargets: given.loopbackTargets && {
        ...given.loopbackTargets,
        servicePorts: servicePorts([gatewayPort, dynamoDb?.port, queuePort], [env.DYNAMODB_ENDPOINT, ...chains.map((chain) => chain.rpcUrl)]),
      },
    };
    useRuntimeConfig(config);
    const tableCreated = (await ensureTable(config.tableName)) === 'created';
    await consoleBuilt;
    gateway =
      options.processes === 'this process'
        ? await startGatewayHere(gatewayPort, options.host, config)
        : await startGatewayProcesses({
            count: options.processes.gateways,
            port: gatewayPort,
            host: options.host,
            config,
          });
    background = options.processes === 'this process' ? undefined : await startBackgroundProcess(chains, config);
    const work: BackgroundWork = background ? { stop: background.close } : await startBackgroundWork(chains);
    const { port } = gateway;
    return {
      url: `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`,
      dynamoDbEndpoint: config.dynamoDbEndpoint!,
      dynamoDbPid: dynamoDb?.pid,
      devChain: devChain && options.devChain && { rpcUrl: devChain.rpcUrl, chainId: options.devChain.chainId, pid: devChain.pid },
      tableCreated,
      devChainExit: devChain?.unexpectedExit ?? new Promise(() => undefined),
      storeExit: dynamoDb?.unexpectedExit ?? new Promise(() => undefined),
      explained,
      gatewayPids: gateway.pids,
      gatewayExit: gateway.unexpectedExit ?? new Promise(() => undefined),
      backgroundPid: background?.pid,
      backgroundExit: background?.unexpectedExit ?? new Promise(() => undefined),
      close: async () => {
        await gateway!.close();
        await work.stop();
        await devChain?.stop();
        await dynamoDb?.close();
      },
    };
  } catch (error) {
    await gateway?.close();
    await background?.close();
    await devChain?.stop();
    await dynamoDb?.close();
    throw explained(error);
  }
}

/** The embedded store in this process, in the shape of its own process's handle: it exits only with this one. */
async function startStoreHere(options: EmbeddedDynamoDbOptions): Promise<DynamoDbProcess> {
  const store = await startEmbeddedDynamoDb(options);
  return { ...store, pid: process.pid, unexpectedExit: new Promise(() => undefined), failure: () => undefined };
}

/** The local API Gateway, in processes of its own or in this one. */
type RunningGateway = Pick<GatewayProcesses, 'port' | 'close'> & Partial<Pick<GatewayProcesses, 'pids' | 'unexpectedExit'>>;

/** The gateway in this process, on a token bucket of its own. */
async function startGatewayHere(port: number, host: string, config: RuntimeConfig): Promise<RunningGateway> {
  const server = await createLocalGateway({
    routes: routeList,
    stage: config.stage,
    throttle: new TokenBucketThrottle(config.localThrottle),
    authorizerCacheTtlSeconds: config.authorizerCacheTtlSeconds,
    bounds: config.localGatewayBounds,
  });
  await listen(server, port, host);
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
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
async function pageTokenKeyFor(given: string | undefined, dataDir: string | undefined): Promise<string> {
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

/**
 * The dev chain, or none when this platform has no anvil binary (npm's registry may lack its
 * package): the service then starts without it and says so in one line.
 */
async function startLocalDevChain(options: DevChainOptions): Promise<DevChain | undefined> {
  const binary = findAnvil();
  if (!binary) {
    logger.warn(`no dev chain: no anvil binary for ${process.platform}-${process.arch} (neither npm's @foundry-rs/anvil nor an anvil on PATH); DEV_CHAIN=off silences this`);
    return undefined;
  }
  if (options.port !== 0 && (await portTaken(options.port))) throw portInUse(options.port, 'DEV_CHAIN_PORT');
  return startDevChain(options, binary);
}

function portTaken(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(true));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(false)));
  });
}
